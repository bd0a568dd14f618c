/**
 * docs/runtime.md: every code block in it is a region of a real file (named in
 * a `<!-- code: path#region -->` comment above the block) and still matches
 * it; the guide's own files run here against a real apiserver (the example's
 * files run in the example's tests).
 */
import { readFileSync } from "node:fs";
import { Client, Manager, silentLogger } from "@setpoint/runtime";
import { startTestEnv, type TestEnv, webhookCertificate } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ConfigMapKind } from "../types.ts";
import { clientMoreTour, clientTour } from "./client.ts";
import { AUDIT_FINALIZER, AUDIT_LABEL, addAuditController } from "./finalizer.ts";
import { informerTour } from "./informer.ts";
import { addConfigMapCounter, COUNTER_SCOPE } from "./runnable.ts";
import { CLAIM_LABEL, startClaimsWebhook } from "./webhook.ts";

const ROOT = new URL("../../../", import.meta.url);
const GUIDE = "docs/runtime.md";

interface Block {
  /** Line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  /** "path#region" or "path" from the comment above, if any. */
  source?: string;
}

/** The fenced code blocks of a Markdown text, with the `code:` comment above each. */
function codeBlocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    let j = start - 1;
    while (j >= 0 && lines[j].trim() === "") j--;
    const marker = j >= 0 ? /^<!-- code: (\S+) -->$/.exec(lines[j].trim()) : null;
    blocks.push({ line: start + 1, lang: open[1], code: body.join("\n"), source: marker?.[1] });
  }
  return blocks;
}

/** Lines between `// #region name` and the next `// #endregion`, dedented. */
function region(text: string, name: string): string | undefined {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.trim() === `// #region ${name}`);
  if (start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && l.trim() === "// #endregion");
  if (end < 0) return undefined;
  const body = lines.slice(start + 1, end);
  const indent = Math.min(
    ...body.filter((l) => l.trim() !== "").map((l) => l.length - l.trimStart().length),
  );
  return body.map((l) => l.slice(indent)).join("\n");
}

function read(path: string): string {
  return readFileSync(new URL(path, ROOT), "utf8");
}

describe("docs/runtime.md", () => {
  const blocks = codeBlocks(read(GUIDE));

  it("has code blocks, and each names the file region it shows", () => {
    expect(blocks.length).toBeGreaterThan(5);
    // The one diagram is plain text; everything else is code from a file.
    const unsourced = blocks.filter((b) => !b.source && b.lang !== "");
    expect(unsourced.map((b) => `line ${b.line}`)).toEqual([]);
  });

  it.each(blocks.filter((b) => b.source).map((b) => [b.source as string, b] as const))(
    "%s matches its file",
    (source, block) => {
      const [path, name] = source.split("#");
      const text = read(path);
      const want = name === undefined ? text : region(text, name);
      expect(want, `no region ${name} in ${path}`).toBeDefined();
      expect(block.code.trimEnd()).toBe(want?.trimEnd());
    },
  );
});

describe("the guide's examples against a real apiserver", () => {
  let env: TestEnv;
  let client: Client;
  beforeAll(async () => {
    env = await startTestEnv();
    client = new Client(env.config);
    for (const name of [
      "guide-client",
      "guide-informer",
      "guide-audit",
      "guide-more",
      "guide-webhook",
    ]) {
      await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    }
  });
  afterAll(async () => {
    client?.close();
    await env?.stop();
  });

  it("client: create, get, list, update, patch, apply, not found, delete", async () => {
    const log = await clientTour(client, "guide-client");
    expect(log[0]).toMatch(/^created at resourceVersion \d+$/);
    expect(log.slice(1)).toEqual(["listed 1", "missing is not found"]);
    const gone = await client.get(ConfigMapKind, "app-config", "guide-client").catch((e) => e);
    expect((gone as { status?: { code?: number } }).status?.code).toBe(404);
  });

  it("client: bounded concurrency, collection delete, subresource, discovery, raw", async () => {
    const before = { ...client.stats.byVerb };
    const log = await clientMoreTour(client, "guide-more");
    expect(log).toEqual(["created a,b,c", "phase Active", "configmaps in v1", "GET /version: 200"]);
    const left = await client.list(ConfigMapKind, { namespace: "guide-more" });
    expect(left.items.filter((o) => o.metadata.labels?.batch === "1")).toEqual([]);
    const verbs = client.stats.byVerb;
    expect((verbs.deletecollection ?? 0) - (before.deletecollection ?? 0)).toBe(1);
    expect((verbs.raw ?? 0) - (before.raw ?? 0)).toBe(1);
  });

  it("runnable: a side informer with a transform, ready once synced, removed on stop", async () => {
    const ns = "guide-more";
    const mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
    const counts = new Map<string, number>();
    addConfigMapCounter(mgr, counts);
    const stop = new AbortController();
    await mgr.start(stop.signal);
    try {
      const readiness = await mgr.readyz.run("configmap-counter");
      expect(readiness.map((r) => r.result.ok)).toEqual([true]);
      const before = counts.get(ns) ?? 0;
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "counted", namespace: ns },
        data: { big: "x".repeat(1000) },
      });
      await vi.waitFor(() => expect(counts.get(ns)).toBe(before + 1), {
        timeout: 5_000,
        interval: 20,
      });
      // The informer stores names only.
      const held = mgr.cache.informerFor(ConfigMapKind, COUNTER_SCOPE).get("counted", ns);
      expect(held).toEqual({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "counted", namespace: ns },
      });
    } finally {
      stop.abort();
      await mgr.done;
    }
    // Stopped with the manager, it removed its informer from the cache.
    expect(mgr.cache.health().filter((h) => h.scope.transform)).toEqual([]);
  });

  it("webhook: a rule across objects, from the informer cache, refuses a second claim", async () => {
    const ns = "guide-webhook";
    const mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
    const tls = await webhookCertificate();
    const server = await startClaimsWebhook(mgr, tls);
    const stop = new AbortController();
    await mgr.start(stop.signal);
    const config = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "claims" },
      webhooks: [
        {
          name: "claims.examples.setpoint.dev",
          clientConfig: { url: server.url("/validate-claims"), caBundle: tls.caBundle },
          rules: [
            {
              operations: ["CREATE", "UPDATE"],
              apiGroups: [""],
              apiVersions: ["v1"],
              resources: ["configmaps"],
            },
          ],
          sideEffects: "None",
          admissionReviewVersions: ["v1"],
        },
      ],
    };
    await client.create(config);
    const claiming = (name: string) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: ns, labels: { [CLAIM_LABEL]: "db" } },
    });
    try {
      await client.create(claiming("first"));
      await vi.waitFor(
        () => expect(mgr.cache.informerFor(ConfigMapKind).get("first", ns)).toBeDefined(),
        { timeout: 5_000, interval: 20 },
      );
      const refused = await client.create(claiming("second")).catch((e) => e);
      expect(refused.status).toMatchObject({
        code: 403,
        message:
          'admission webhook "claims.examples.setpoint.dev" denied the request: db is already claimed by ConfigMap first',
      });
      // The holder itself may still be updated.
      const held = await client.get(ConfigMapKind, "first", ns);
      held.data = { updated: "yes" };
      await client.update(held);
    } finally {
      await client.delete(
        { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration" },
        "claims",
      );
      stop.abort();
      await mgr.done;
      await server.stop();
    }
  });

  it("informer: events, an index, frozen objects", async () => {
    const ns = "guide-informer";
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "web-1", namespace: ns, labels: { app: "web" } },
      data: { mode: "fast" },
    });
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "other", namespace: ns },
      data: { mode: "fast" },
    });
    const seen = await informerTour(client, ns, async () => {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "web-2", namespace: ns, labels: { app: "web" } },
        data: { mode: "fast" },
      });
      await client.delete(ConfigMapKind, "web-2", ns);
    });
    expect(seen.events).toEqual(["add web-1", "add web-2", "delete web-2"]);
    expect(seen.fast).toEqual(["web-1"]);
    expect(seen.frozen).toBe(true);
    expect(seen.cloneMode).toBe("slow");
  });

  it("finalizer: cleanup recorded before the object goes", async () => {
    const ns = "guide-audit";
    const mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
    addAuditController(mgr);
    const stop = new AbortController();
    await mgr.start(stop.signal);
    try {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "precious", namespace: ns, labels: { [AUDIT_LABEL]: "true" } },
      });
      await vi.waitFor(
        async () => {
          const cm = await client.get(ConfigMapKind, "precious", ns);
          expect(cm.metadata.finalizers).toEqual([AUDIT_FINALIZER]);
        },
        { timeout: 5_000, interval: 20 },
      );
      const uid = (await client.get(ConfigMapKind, "precious", ns)).metadata.uid;
      await client.delete(ConfigMapKind, "precious", ns);
      await vi.waitFor(
        async () => {
          const log = await client.get(ConfigMapKind, "audit-log", ns);
          expect(log.data).toEqual({ precious: `deleted (uid ${uid})` });
          const gone = await client.get(ConfigMapKind, "precious", ns).catch((e) => e);
          expect((gone as { status?: { code?: number } }).status?.code).toBe(404);
        },
        { timeout: 5_000, interval: 20 },
      );
      expect(mgr.finalizers()).toEqual([AUDIT_FINALIZER]);
    } finally {
      stop.abort();
      await mgr.done;
    }
  });
});
