/**
 * Garbage collection benchmark: `npm run bench:gc`.
 *
 * One owner ConfigMap with 10,000 dependent ConfigMaps. In one run:
 *
 * - baseline: the time to create the dependents over HTTP (50 concurrent
 *   keep-alive requests);
 * - the owner is deleted (Background) and the time until every dependent is
 *   gone is measured (the last DELETED event on a watch of the namespace), with
 *   the built-in garbage collector running in this process as an ordinary
 *   client of the API (the controller manager with only the collector);
 * - the requests the collector made during the cascade, per dependent, by verb
 *   (goal: one DELETE each and no per-object GETs).
 *
 * The API server runs in a child process (bench/lib/api-child.ts: the apiserver
 * as `setpoint up` runs it, durable SQLite), so the collector and the load do
 * not share its event loop.
 *
 * Environment:
 *   BENCH_GC_DEPENDENTS   dependents of the owner (default 10000)
 *   BENCH_GC_WORKERS      the collector's concurrent reconciles (default: its own default)
 *   BENCH_VOLATILE=1      SQLite without waiting for the disk at commit
 */

import type { KubeObject } from "@setpoint/api";
import { Client, silentLogger } from "@setpoint/runtime";
import { createControllerManager, type GarbageCollector } from "../src/controllers/index.ts";
import { ChildServer } from "./lib/child-server.ts";
import { printTable, type Row } from "./lib/table.ts";

/** Dependents of the one owner. */
const DEPENDENTS = Number(process.env.BENCH_GC_DEPENDENTS ?? 10_000);
/** Concurrent create requests while building the baseline. */
const CREATE_CONCURRENCY = 50;
/** Longest wait for the cascade to finish. */
const CASCADE_TIMEOUT_MS = 600_000;
const NAMESPACE = "bench-gc";
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;

function log(message: string): void {
  process.stderr.write(`bench:gc: ${message}\n`);
}

async function createDependents(client: Client, owner: KubeObject): Promise<number> {
  const ref = {
    apiVersion: "v1",
    kind: "ConfigMap",
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
  };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < DEPENDENTS) {
        const i = next++;
        await client.create({
          ...CM,
          metadata: { name: `dep-${i}`, namespace: NAMESPACE, ownerReferences: [ref] },
          data: { index: String(i) },
        });
      }
    }),
  );
  return performance.now() - started;
}

/** Resolves with the time of the last DELETED event once every dependent is gone. */
function watchDeletions(client: Client, fromVersion: string): Promise<number> {
  const stream = client.watch<KubeObject>(CM, {
    namespace: NAMESPACE,
    resourceVersion: fromVersion,
  });
  return (async () => {
    const deleted = new Set<string>();
    const deadline = performance.now() + CASCADE_TIMEOUT_MS;
    for await (const ev of stream) {
      if (ev.type === "DELETED") {
        const name = ev.object.metadata.name ?? "";
        if (name.startsWith("dep-")) deleted.add(name);
      }
      if (deleted.size >= DEPENDENTS) {
        const at = performance.now();
        stream.close();
        return at;
      }
      if (performance.now() > deadline) throw new Error("the cascade did not finish in time");
    }
    throw new Error(`watch ended after ${deleted.size} of ${DEPENDENTS} deletions`);
  })();
}

async function main(): Promise<void> {
  log(`starting the API server (child process); ${DEPENDENTS} dependents`);
  const server = await ChildServer.start("api", {
    tls: false,
    volatile: process.env.BENCH_VOLATILE === "1",
  });
  const client = new Client({ server: server.url });
  try {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
    const owner = await client.create<KubeObject>({
      ...CM,
      metadata: { name: "owner", namespace: NAMESPACE },
    });
    log("creating dependents");
    const createMs = await createDependents(client, owner);
    log(`created in ${(createMs / 1000).toFixed(2)} s`);

    const workers = process.env.BENCH_GC_WORKERS ? Number(process.env.BENCH_GC_WORKERS) : undefined;
    const cm = createControllerManager({
      restConfig: { server: server.url },
      disabled: ["namespace", "event-ttl"],
      gc: workers ? { workers } : {},
      logger: silentLogger(),
    });
    await cm.start();
    const gc = cm.controllers[0] as GarbageCollector;
    await gc.synced();
    log(`collector synced (${gc.graph.size} objects in its graph)`);

    const list = await client.list(CM, { namespace: NAMESPACE, limit: 1 });
    const done = watchDeletions(client, list.metadata.resourceVersion ?? "");
    const stats = cm.manager.client.stats;
    const before = { ...stats.byVerb };
    const requestsBefore = stats.requests;
    const started = performance.now();
    await client.delete(CM, "owner", NAMESPACE);
    const finished = await done;
    const gcMs = finished - started;
    const by = (verb: string) => (stats.byVerb[verb] ?? 0) - (before[verb] ?? 0);
    const total = stats.requests - requestsBefore;
    log(`cascade finished in ${(gcMs / 1000).toFixed(2)} s; ${total} requests by the collector`);
    await cm.stop();

    const perDep = (n: number) => n / DEPENDENTS;
    const rows: Row[] = [
      {
        backend: "gc",
        metric: `cascade of ${DEPENDENTS} dependents`,
        value: gcMs,
        unit: "ms",
        baseline: createMs,
        baselineLabel: `creating them (${CREATE_CONCURRENCY} concurrent)`,
        better: "lower",
      },
      {
        backend: "gc",
        metric: "dependents/s",
        value: (DEPENDENTS * 1000) / gcMs,
        unit: "/s",
        baseline: (DEPENDENTS * 1000) / createMs,
        baselineLabel: "creates/s",
        better: "higher",
      },
    ];
    printTable("Garbage collection: delete an owner, time until its dependents are gone", rows);
    console.log("\nRequests by the collector during the cascade, per dependent:");
    for (const verb of Object.keys(stats.byVerb).sort()) {
      const n = by(verb);
      if (n > 0) console.log(`  ${verb.padEnd(10)} ${perDep(n).toFixed(3)}  (${n})`);
    }
    console.log(`  ${"total".padEnd(10)} ${perDep(total).toFixed(3)}  (${total})`);
    const deletesOk = by("delete") === DEPENDENTS;
    const getsOk = by("get") === 0;
    console.log(
      `  goal: one DELETE per dependent: ${deletesOk ? "met" : "MISSED"}; ` +
        `no per-object GETs: ${getsOk ? "met" : "MISSED"}`,
    );
  } finally {
    client.close();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
