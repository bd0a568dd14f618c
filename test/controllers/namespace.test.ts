/**
 * Namespace deletion against a real apiserver over HTTP: the namespace
 * controller deletes every kind of content, waits on finalizers while reporting
 * Kubernetes' conditions, then finalizes so the namespace goes away.
 */

import type { Condition, KubeObject } from "@setpoint/api";
import { isForbidden } from "@setpoint/runtime";
import { describe, expect, it } from "vitest";
import {
  applyConditions,
  deletionConditions,
  NAMESPACE_CONDITION_TYPES,
} from "../../src/controllers/namespace.ts";
import { installCrd, startTestEnv } from "../../src/testenv/testenv.ts";
import { schemalessCrd } from "../helpers/crd.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile } from "../helpers/test-server.ts";
import {
  CM,
  clearFinalizers,
  configMap,
  eventually,
  find,
  gone,
  NS,
  SECRET,
  startControllers,
} from "./helpers.ts";

// Each test runs the controllers it tests.
const env = startForFile(() => startTestEnv({ controllers: false }));
const _cm = startForFile(() =>
  startControllers({ restConfig: env.config, disabled: ["garbage-collector", "event-ttl"] }),
);

function conditionsOf(ns: KubeObject | undefined): Condition[] {
  return ((ns?.status as { conditions?: Condition[] } | undefined)?.conditions ??
    []) as Condition[];
}

function condition(ns: KubeObject | undefined, type: string): Condition | undefined {
  return conditionsOf(ns).find((c) => c.type === type);
}

describe("namespace controller", () => {
  it("deletes an empty namespace", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.delete(NS, ns);
    await eventually(() => gone(env.client, NS, ns), "namespace removed");
  });

  it("deletes every kind of content, waits on finalizers, then removes the namespace", async () => {
    const ns = await freshNamespace(env.client);
    for (let i = 0; i < 5; i++) await configMap(env.client, ns, `cm-${i}`);
    for (let i = 0; i < 3; i++) {
      await env.client.create({ ...SECRET, metadata: { name: `s-${i}`, namespace: ns } });
    }
    await env.client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "sa", namespace: ns },
    });
    await env.client.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "lease", namespace: ns },
      spec: {},
    });
    await configMap(env.client, ns, "held", { finalizers: ["example.com/hold"] });

    await env.client.delete(NS, ns);
    const waiting = await eventually(async () => {
      const o = await find(env.client, NS, ns);
      return condition(o, "NamespaceFinalizersRemaining")?.status === "True" ? o : undefined;
    }, "NamespaceFinalizersRemaining");
    expect((waiting.status as { phase?: string }).phase).toBe("Terminating");
    expect(condition(waiting, "NamespaceFinalizersRemaining")).toMatchObject({
      reason: "SomeFinalizersRemain",
      message:
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances",
    });
    expect(condition(waiting, "NamespaceContentRemaining")).toMatchObject({
      status: "True",
      reason: "SomeResourcesRemain",
      message: "Some resources are remaining: configmaps. has 1 resource instances",
    });
    expect(condition(waiting, "NamespaceDeletionDiscoveryFailure")).toMatchObject({
      status: "False",
      reason: "ResourcesDiscovered",
    });
    expect(condition(waiting, "NamespaceDeletionContentFailure")).toMatchObject({
      status: "False",
      reason: "ContentDeleted",
    });
    const left = await env.client.list<KubeObject>(CM, { namespace: ns });
    expect(left.items.map((o) => o.metadata.name)).toEqual(["held"]);
    expect(left.items[0].metadata.deletionTimestamp).toBeDefined();
    expect((await env.client.list(SECRET, { namespace: ns })).items).toEqual([]);
    expect(await gone(env.client, { apiVersion: "v1", kind: "ServiceAccount" }, "sa", ns)).toBe(
      true,
    );
    // Nothing new gets in meanwhile.
    await expect(configMap(env.client, ns, "late")).rejects.toSatisfy(isForbidden);

    await clearFinalizers(env.client, CM, "held", ns);
    await eventually(() => gone(env.client, NS, ns), "namespace removed");
  });
  it("deletes custom resources in the namespace, waiting on their finalizers", async () => {
    await installCrd(env.client, schemalessCrd("gadgets", "Gadget"));
    const GADGET = { apiVersion: "example.com/v1", kind: "Gadget" };
    const ns = await freshNamespace(env.client);
    for (let i = 0; i < 3; i++) {
      await env.client.create({
        ...GADGET,
        metadata: { name: `g-${i}`, namespace: ns },
        spec: { i },
      });
    }
    await env.client.create({
      ...GADGET,
      metadata: { name: "held", namespace: ns, finalizers: ["example.com/hold"] },
    });
    await configMap(env.client, ns, "cm");
    await env.client.delete(NS, ns);
    const waiting = await eventually(async () => {
      const o = await find(env.client, NS, ns);
      return condition(o, "NamespaceContentRemaining")?.status === "True" ? o : undefined;
    }, "NamespaceContentRemaining");
    expect(condition(waiting, "NamespaceContentRemaining")?.message).toBe(
      "Some resources are remaining: gadgets.example.com has 1 resource instances",
    );
    const left = await env.client.list<KubeObject>(GADGET, { namespace: ns });
    expect(left.items.map((o) => o.metadata.name)).toEqual(["held"]);
    expect(await gone(env.client, CM, "cm", ns)).toBe(true);
    await clearFinalizers(env.client, GADGET, "held", ns);
    await eventually(() => gone(env.client, NS, ns), "namespace removed");
  });
});

describe("namespace conditions", () => {
  it("are all False with Kubernetes' OK reasons when nothing is wrong", () => {
    const conditions: Condition[] = [];
    const changed = applyConditions(
      conditions,
      deletionConditions(
        { failed: new Map(), unparsed: [] },
        { remaining: new Map(), finalizers: new Map(), errors: [] },
      ),
    );
    expect(changed).toBe(true);
    expect(conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ["NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered"],
      ["NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions"],
      ["NamespaceDeletionContentFailure", "False", "ContentDeleted"],
      ["NamespaceContentRemaining", "False", "ContentRemoved"],
      ["NamespaceFinalizersRemaining", "False", "ContentRemoved"],
    ]);
    expect(conditions.map((c) => c.type)).toEqual([...NAMESPACE_CONDITION_TYPES]);
    // The same outcome again changes nothing (no status write).
    expect(
      applyConditions(
        conditions,
        deletionConditions(
          { failed: new Map(), unparsed: [] },
          { remaining: new Map(), finalizers: new Map(), errors: [] },
        ),
      ),
    ).toBe(false);
  });

  it("word failures as Kubernetes does", () => {
    const failing = deletionConditions(
      { failed: new Map([["example.com/v1", "boom"]]), unparsed: ["a/b/c"] },
      {
        remaining: new Map([
          ["widgets.example.com", 2],
          ["configmaps.", 3],
        ]),
        finalizers: new Map([["example.com/x", 2]]),
        errors: ["secrets.: denied"],
      },
    );
    expect(failing.get("NamespaceDeletionDiscoveryFailure")?.reason).toBe("DiscoveryFailed");
    expect(failing.get("NamespaceDeletionDiscoveryFailure")?.message).toMatch(
      /^Discovery failed for some groups, 1 failing: /,
    );
    expect(failing.get("NamespaceDeletionGroupVersionParsingFailure")?.reason).toBe(
      "GroupVersionParsingFailed",
    );
    expect(failing.get("NamespaceDeletionContentFailure")).toEqual({
      reason: "ContentDeletionFailed",
      message: "Failed to delete all resource types, 1 remaining: secrets.: denied",
    });
    expect(failing.get("NamespaceContentRemaining")?.message).toBe(
      "Some resources are remaining: configmaps. has 3 resource instances, widgets.example.com has 2 resource instances",
    );
    expect(failing.get("NamespaceFinalizersRemaining")?.message).toBe(
      "Some content in the namespace has finalizers remaining: example.com/x in 2 resource instances",
    );
  });
});
