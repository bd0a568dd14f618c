/**
 * The builder's watch wiring against a real apiserver: `owns` maps to the
 * controlling owner (cluster-scoped owners give requests without a namespace),
 * `watches` maps through a function, predicates filter, and initial-list keys
 * are all reconciled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/api/meta.ts";
import { kind } from "../../src/runtime/builder.ts";
import type { Client } from "../../src/runtime/client.ts";
import { setControllerReference } from "../../src/runtime/helpers/ownerrefs.ts";
import { silentLogger } from "../../src/runtime/log.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { labelChanged, matching } from "../../src/runtime/predicates.ts";
import type { Request } from "../../src/runtime/reconciler.ts";
import { type ApiEnv, eventually, sleep, startApiEnv } from "./apienv.ts";

const NS = kind("v1", "Namespace");
const CM = kind("v1", "ConfigMap");
const SECRET = kind("v1", "Secret");

let env: ApiEnv;
let client: Client;
let seq = 0;

beforeAll(async () => {
  env = await startApiEnv();
  client = env.client();
});
afterAll(async () => {
  await env?.close();
});

function unique(prefix: string): string {
  return `${prefix}-${++seq}-${Date.now().toString(36)}`;
}

function manager(): Manager {
  return new Manager({ client: env.client(), logger: silentLogger() });
}

describe("builder", () => {
  it("requires for(), rejects bad names and duplicate controllers", () => {
    const mgr = manager();
    expect(() => mgr.controller("Bad_Name")).toThrow(/DNS-1123/);
    expect(() => mgr.controller("x").complete(async () => {})).toThrow(/for\(\) is required/);
    expect(() => mgr.controller("x").for(CM).for(CM)).toThrow(/only once/);
    mgr
      .controller("x")
      .for(CM)
      .complete(async () => {});
    expect(() =>
      mgr
        .controller("x")
        .for(CM)
        .complete(async () => {}),
    ).toThrow(/already registered/);
  });

  it("owns() maps a dependent to its cluster-scoped controlling owner", async () => {
    const nsName = unique("owner");
    const owner = await client.create<KubeObject>({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: nsName },
    });
    const mgr = manager();
    const seen: Request[] = [];
    mgr
      .controller("ns-owner")
      .for(NS, { predicates: [matching((o) => o.metadata.name === nsName)] })
      .owns(CM)
      .complete(async (req) => {
        seen.push(req);
      });
    await mgr.start();
    try {
      await eventually(() => seen.length >= 1, 10_000, "initial reconcile");
      const before = seen.length;
      const dep: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "dep", namespace: nsName },
      };
      setControllerReference(owner, dep);
      await client.create(dep);
      await eventually(() => seen.length > before, 10_000, "owner reconcile");
      // The owner is cluster-scoped: the request has no namespace.
      expect(seen.at(-1)).toEqual({ name: nsName });
      // An unowned ConfigMap wakes nothing.
      const count = seen.length;
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "free", namespace: nsName },
      });
      await sleep(300);
      expect(seen.length).toBe(count);
    } finally {
      await mgr.stop();
    }
  });

  it("watches() maps through a function; predicates filter updates", async () => {
    const nsName = unique("watch");
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: nsName } });
    const mgr = manager();
    const seen: string[] = [];
    mgr
      .controller("secret-to-cm")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === nsName)] })
      .watches(
        SECRET,
        (s) =>
          s.metadata.namespace === nsName
            ? { namespace: nsName, name: `for-${s.metadata.name}` }
            : undefined,
        { predicates: [labelChanged()] },
      )
      .complete(async (req) => {
        if (req.namespace === nsName) seen.push(req.name);
      });
    await mgr.start();
    try {
      const s = await client.create<KubeObject>({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "s1", namespace: nsName },
      });
      await eventually(() => seen.includes("for-s1"), 10_000, "mapped request");
      const count = seen.length;
      // An update that does not touch labels is filtered out...
      const annotated = await client.update<KubeObject>({
        ...s,
        metadata: { ...s.metadata, annotations: { a: "1" } },
      });
      await sleep(300);
      expect(seen.length).toBe(count);
      // ...one that does wakes the mapped key.
      await client.update({
        ...annotated,
        metadata: { ...annotated.metadata, labels: { l: "1" } },
      });
      await eventually(() => seen.length > count, 10_000, "label change");
    } finally {
      await mgr.stop();
    }
  });

  it("reconciles every object of a large initial list while fresh changes still get through", async () => {
    const nsName = unique("bulk");
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: nsName } });
    const total = 150;
    for (let i = 0; i < total; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: `cm-${i + j}`, namespace: nsName },
          }),
        ),
      );
    }
    const mgr = manager();
    const order: string[] = [];
    mgr
      .controller("bulk")
      .for(CM, { predicates: [matching((o) => o.metadata.namespace === nsName)] })
      .withOptions({ maxConcurrentReconciles: 1 })
      .complete(async (req) => {
        order.push(req.name);
        await sleep(2);
      });
    await mgr.start();
    try {
      await eventually(() => order.length >= 5, 10_000, "first reconciles");
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "fresh", namespace: nsName },
      });
      await eventually(() => order.includes("fresh"), 10_000, "fresh reconcile");
      const at = order.indexOf("fresh");
      // Served ahead of the remaining backlog, not after it.
      expect(at).toBeLessThan(total - 10);
      await eventually(() => new Set(order).size >= total + 1, 20_000, "all reconciled");
    } finally {
      await mgr.stop();
    }
  });
});
