/**
 * A controller watching a kind in a scope (`for(kind, { scope })`, `owns`,
 * `watches`) whose reconciler reads that kind without naming a scope reads
 * the watch's informer: the one whose event woke the reconcile. It used to
 * get the kind's unscoped informer instead: a second list and watch of the
 * whole kind, started lazily, whose copy could lag behind that event (the
 * runtime benchmark saw reconciles read a version seconds old).
 */
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/testenv.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" };
const SECRET = { apiVersion: "v1", kind: "Secret" };
let env: TestEnv;

beforeAll(async () => {
  env = await startTestEnv();
  for (const name of ["scoped", "elsewhere"]) {
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
    await env.client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "one", namespace: name },
    });
  }
  await env.client.create({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", namespace: "scoped", labels: { app: "x" } },
  });
  await env.client.create({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "t", namespace: "scoped" },
  });
});
afterAll(async () => {
  await env?.stop();
});

async function running(mgr: Manager, client: Client, body: () => Promise<void>): Promise<void> {
  const stop = new AbortController();
  await mgr.start(stop.signal);
  try {
    await body();
  } finally {
    stop.abort();
    await mgr.done;
    client.close();
  }
}

it("a reconcile reading its own kind without a scope uses the watch's informer", async () => {
  const client = new Client(env.config);
  const mgr = new Manager({ client, logger: silentLogger() });
  let reads = 0;
  mgr
    .controller("scoped")
    .for(CM, { scope: { namespace: "scoped" } })
    .complete(async (req, ctx) => {
      await ctx.reader.get<KubeObject>(CM, req.name, req.namespace);
      reads++;
    });
  await running(mgr, client, async () => {
    await vi.waitFor(() => expect(reads).toBeGreaterThan(0), { timeout: 5_000 });
    // One informer for the kind, so one list and one watch.
    expect(mgr.cache.health().map((h) => h.scope)).toEqual([{ namespace: "scoped" }]);
    expect(client.stats.byVerb.list).toBe(1);
  });
});

it("get, peek and list of a watched kind default to its watch's scope; a named scope is kept", async () => {
  const client = new Client(env.config);
  const mgr = new Manager({ client, logger: silentLogger() });
  const seen: string[][] = [];
  mgr
    .controller("scoped-reads")
    .for(CM, { scope: { namespace: "scoped" } })
    .owns(SECRET, { scope: { labelSelector: "app=x" } })
    .complete(async (req, ctx) => {
      const cms = await ctx.reader.list<KubeObject>(CM);
      const secrets = await ctx.reader.list<KubeObject>(SECRET);
      const unlabelled = ctx.reader.peek<KubeObject>(SECRET, "t", req.namespace);
      const everywhere = await ctx.reader.list<KubeObject>(CM, { scope: {} });
      seen.push([
        cms.items.map((o) => o.metadata.namespace).join(),
        secrets.items.map((o) => o.metadata.name).join(),
        String(unlabelled?.metadata.name),
        String(everywhere.items.length),
      ]);
    });
  await running(mgr, client, async () => {
    await vi.waitFor(() => expect(seen.length).toBeGreaterThan(0), { timeout: 5_000 });
    // Only the explicit `{}` read the whole kind (a third informer).
    expect(seen[0]).toEqual(["scoped", "s", "undefined", "2"]);
    expect(mgr.cache.health().map((h) => `${h.kind} ${JSON.stringify(h.scope)}`)).toEqual([
      'ConfigMap {"namespace":"scoped"}',
      'Secret {"labelSelector":"app=x"}',
      "ConfigMap {}",
    ]);
  });
});
