/**
 * The apiserver's /metrics over real HTTPS: Kubernetes' request, in-flight,
 * long-running, storage object and storage latency metrics, and Setpoint's count of
 * whole-collection lists by client.
 */
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../e2e/helpers/http.ts";
import { type E2eServer, startE2eServer } from "../e2e/helpers/server.ts";
import { eventually } from "../helpers/poll.ts";

let srv: E2eServer;
beforeAll(async () => {
  srv = await startE2eServer({ tls: true });
});
afterAll(async () => {
  await srv?.close();
});

/** The value of the sample `name{labels}` (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^([^{ ]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = new Map<string, string>();
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) got.set(k, v);
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) return Number(m[3]);
  }
  return undefined;
}

async function metrics(): Promise<string> {
  const r = await request(srv.target, "GET", "/metrics", { headers: { Accept: "text/plain" } });
  expect(r.code).toBe(200);
  expect(r.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text;
}

const CM = "/api/v1/namespaces/default/configmaps";
const CM_LABELS = { group: "", version: "v1", resource: "configmaps", component: "apiserver" };

describe("/metrics", () => {
  it("needs credentials, like every other non-public path", async () => {
    const r = await request(srv.target, "GET", "/metrics", { anonymous: true });
    expect(r.code).toBe(401);
  });

  it("counts requests by verb, resource, scope and code, with latencies", async () => {
    const created = await request(srv.target, "POST", CM, {
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "m1" }, data: { a: "1" } },
    });
    expect(created.code).toBe(201);
    expect((await request(srv.target, "GET", `${CM}/m1`)).code).toBe(200);
    expect((await request(srv.target, "GET", `${CM}/absent`)).code).toBe(404);
    expect((await request(srv.target, "GET", CM)).code).toBe(200);
    expect((await request(srv.target, "GET", CM, { headers: {} })).code).toBe(200);
    const text = await metrics();
    const total = (verb: string, scope: string, code: string) =>
      sample(text, "apiserver_request_total", {
        ...CM_LABELS,
        verb,
        scope,
        code,
        dry_run: "",
        subresource: "",
      });
    expect(total("POST", "namespace", "201")).toBe(1);
    expect(total("GET", "resource", "200")).toBe(1);
    expect(total("GET", "resource", "404")).toBe(1);
    expect(total("LIST", "namespace", "200")).toBe(2);
    expect(
      sample(text, "apiserver_request_duration_seconds_count", {
        ...CM_LABELS,
        verb: "LIST",
        scope: "namespace",
      }),
    ).toBe(2);
    expect(
      sample(text, "apiserver_request_duration_seconds_bucket", {
        ...CM_LABELS,
        verb: "POST",
        le: "+Inf",
      }),
    ).toBe(1);
    expect(sample(text, "apiserver_current_inflight_requests", { request_kind: "mutating" })).toBe(
      0,
    );
    // /metrics itself is not counted, so nothing is in flight.
    expect(sample(text, "apiserver_current_inflight_requests", { request_kind: "readOnly" })).toBe(
      0,
    );
    expect(
      sample(text, "apiserver_storage_objects", { resource: "configmaps" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, "apiserver_storage_objects", { resource: "namespaces" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, "etcd_request_duration_seconds_count", {
        operation: "create",
        type: "configmaps",
      }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("shows open watches as long-running requests while they last", async () => {
    const { hostname, port } = new URL(srv.url);
    const watch = https.request({
      host: hostname,
      port,
      path: `${CM}?watch=true`,
      ca: srv.target.ca,
      headers: { Authorization: `Bearer ${srv.target.token}` },
      agent: false,
    });
    const opened = new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
      watch.on("response", resolve);
      watch.on("error", reject);
    });
    watch.end();
    const res = await opened;
    res.resume();
    const longRunning = (text: string) =>
      sample(text, "apiserver_longrunning_requests", {
        ...CM_LABELS,
        verb: "WATCH",
        scope: "namespace",
      });
    expect(longRunning(await metrics())).toBe(1);
    expect(
      sample(await metrics(), "apiserver_watch_cache_watchers", { resource: "configmaps" }),
    ).toBe(1);
    watch.destroy();
    await eventually(async () => longRunning(await metrics()) === 0, "the watch to end");
  });

  it("counts whole-collection lists by client, not selected or paged ones", async () => {
    const agent = { "User-Agent": "widget-controller/v0.1.0 (linux/amd64) setpoint" };
    for (let i = 0; i < 3; i++) {
      expect((await request(srv.target, "GET", CM, { headers: agent })).code).toBe(200);
    }
    await request(srv.target, "GET", `${CM}?labelSelector=app%3Dx`, { headers: agent });
    await request(srv.target, "GET", "/api/v1/namespaces/default/configmaps/m1", {
      headers: agent,
    });
    const text = await metrics();
    expect(
      sample(text, "setpoint_apiserver_client_list_requests_total", {
        client: "widget-controller",
        group: "",
        resource: "configmaps",
      }),
    ).toBe(3);
  });
});
