/**
 * The builder's watch wiring against a real apiserver: `owns` maps to the
 * controlling owner (cluster-scoped owners give requests without a namespace),
 * `watches` maps through a function, predicates filter, and initial-list keys
 * are all reconciled.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { kind } from "../../packages/runtime/src/client/kind.ts";
import { labelChanged, matching } from "../../packages/runtime/src/controller/predicates.ts";
import type { Request } from "../../packages/runtime/src/controller/reconciler.ts";
import { setControllerReference } from "../../packages/runtime/src/helpers/owner-references.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const NS = kind("v1", "Namespace");
const CM = kind("v1", "ConfigMap");
const SECRET = kind("v1", "Secret");

const env = startForFile(startTestServer);

function manager(): Manager {
  return new Manager({ client: env.newClient(), logger: silentLogger() });
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
    const nsName = await freshNamespace(env.client, "owner");
    const owner = await env.client.get<KubeObject>(NS, nsName);
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
      await eventually(() => seen.length >= 1, "initial reconcile", 10_000);
      const before = seen.length;
      const dep: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "dep", namespace: nsName },
      };
      setControllerReference(owner, dep);
      await env.client.create(dep);
      await eventually(() => seen.length > before, "owner reconcile", 10_000);
      // The owner is cluster-scoped: the request has no namespace.
      expect(seen.at(-1)).toEqual({ name: nsName });
      // An unowned ConfigMap wakes nothing.
      const count = seen.length;
      await env.client.create({
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
    const nsName = await freshNamespace(env.client, "watch");
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
      const s = await env.client.create<KubeObject>({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "s1", namespace: nsName },
      });
      await eventually(() => seen.includes("for-s1"), "mapped request", 10_000);
      const count = seen.length;
      // An update that does not touch labels is filtered out...
      const annotated = await env.client.update<KubeObject>({
        ...s,
        metadata: { ...s.metadata, annotations: { a: "1" } },
      });
      await sleep(300);
      expect(seen.length).toBe(count);
      // ...one that does wakes the mapped key.
      await env.client.update({
        ...annotated,
        metadata: { ...annotated.metadata, labels: { l: "1" } },
      });
      await eventually(() => seen.length > count, "label change", 10_000);
    } finally {
      await mgr.stop();
    }
  });

  it("reconciles every object of a large initial list while fresh changes still get through", async () => {
    const nsName = await freshNamespace(env.client, "bulk");
    const total = 150;
    for (let i = 0; i < total; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          env.client.create({
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
      await eventually(() => order.length >= 5, "first reconciles", 10_000);
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "fresh", namespace: nsName },
      });
      await eventually(() => order.includes("fresh"), "fresh reconcile", 10_000);
      const at = order.indexOf("fresh");
      // Served ahead of the remaining backlog, not after it.
      expect(at).toBeLessThan(total - 10);
      await eventually(() => new Set(order).size >= total + 1, "all reconciled", 20_000);
    } finally {
      await mgr.stop();
    }
  });
});
