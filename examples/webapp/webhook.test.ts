/**
 * The WebApp's webhook against a real apiserver (testenv), served by the
 * runtime's WebhookServer over TLS and registered as main.ts registers it: a
 * second WebApp with a host and path another has is refused at creation and at
 * update, case aside; another path, another host, and updates that leave the
 * route alone are admitted; a WebApp being deleted no longer holds its route.
 */
import { Manager, silentLogger, type WebhookServer } from "@setpoint/runtime";
import { startTestEnv, type TestEnv, webhookCertificate } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type WebApp, WebAppKind, webAppCrd } from "./types.ts";
import { routeHolder, startWebAppWebhook, WEBHOOK_PATH, webhookConfiguration } from "./webhook.ts";

const NS = "default";
let env: TestEnv;
let mgr: Manager;
let server: WebhookServer;
const stop = new AbortController();

beforeAll(async () => {
  env = await startTestEnv({ crds: [webAppCrd()] });
  mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  const tls = await webhookCertificate();
  server = await startWebAppWebhook(mgr, tls, { host: "127.0.0.1", port: 0 });
  await mgr.start(stop.signal);
  await env.client.apply(webhookConfiguration(server.url(WEBHOOK_PATH), tls.caBundle), {
    fieldManager: "webapp-controller",
    force: true,
  });
});

afterAll(async () => {
  stop.abort();
  await mgr?.done;
  await server?.stop();
  await env?.stop();
});

function webApp(name: string, host: string, path?: string): WebApp {
  return {
    apiVersion: "examples.setpoint.dev/v1alpha1",
    kind: "WebApp",
    metadata: { name, namespace: NS },
    spec: { image: "hello", host, ...(path ? { path } : {}) },
  };
}

/** Creates `app` and waits until the webhook's cache holds it. */
async function created(app: WebApp): Promise<WebApp> {
  const got = await env.client.create(app);
  await vi.waitFor(
    () => expect(mgr.cache.informerFor(WebAppKind).get(app.metadata.name ?? "", NS)).toBeDefined(),
    { timeout: 5_000, interval: 20 },
  );
  return got;
}

const refusal = (e: unknown) => (e as { status?: { code?: number; message?: string } }).status;

describe("the WebApp webhook: host and path unique across WebApps", () => {
  it("refuses a second WebApp with a host and path another has, at creation and at update", async () => {
    await created(webApp("one", "one.example"));
    const again = await env.client.create(webApp("two", "ONE.example", "/")).catch((e) => e);
    expect(refusal(again)).toEqual(
      expect.objectContaining({
        code: 403,
        message:
          'admission webhook "routes.webapps.examples.setpoint.dev" denied the request: host one.example and path / are already served by WebApp default/one; a WebApp\'s host and path must be unique: choose another host or path',
      }),
    );
    // Another path on the host, or another host, is admitted.
    await created(webApp("one-admin", "one.example", "/admin"));
    const other = await created(webApp("other", "other.example"));
    // Moving onto a route another has is refused too.
    const moved = await env.client
      .patch(WebAppKind, "other", NS, { spec: { host: "one.example" } }, { type: "merge" })
      .catch((e) => e);
    expect(refusal(moved)?.message).toContain("already served by WebApp default/one;");
    // An update that leaves the route alone is admitted.
    const relabelled = await env.client.patch(
      WebAppKind,
      "other",
      NS,
      { metadata: { labels: { tier: "web" } }, spec: { image: "hello:2.0" } },
      { type: "merge" },
    );
    expect(relabelled.metadata.generation).toBe((other.metadata.generation ?? 0) + 1);
  });

  it("does not count a WebApp being deleted, nor the WebApp itself", () => {
    const mine = webApp("a", "x.example");
    expect(routeHolder([mine], mine)).toBeUndefined();
    const leaving = webApp("b", "x.example");
    leaving.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    expect(routeHolder([leaving], mine)).toBeUndefined();
    const elsewhere = { ...webApp("a", "x.example"), metadata: { name: "a", namespace: "other" } };
    expect(routeHolder([elsewhere], mine)).toBe(elsewhere);
  });
});
