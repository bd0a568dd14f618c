/**
 * The garbage collector against a real apiserver over HTTP: cascading deletion
 * in the three propagation policies, names reused with new UIDs, invalid owner
 * references, and the requests it makes per dependent.
 */

import type { KubeObject } from "@setpoint/api";
import { beforeAll, describe, expect, it } from "vitest";
import type { GarbageCollector } from "../../src/controllers/index.ts";
import { installCrd, startTestEnv } from "../../src/testenv/testenv.ts";
import { schemalessCrd } from "../helpers/crd.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { sleep } from "../helpers/poll.ts";
import { startForFile } from "../helpers/test-server.ts";
import {
  CM,
  clearFinalizers,
  configMap,
  EVENT,
  eventually,
  find,
  gone,
  NS,
  refTo,
  SECRET,
  startControllers,
} from "./helpers.ts";

// Each test runs the controllers it tests.
const env = startForFile(() => startTestEnv({ controllers: false }));
const cm = startForFile(() =>
  startControllers({ restConfig: env.config, disabled: ["namespace", "event-ttl"] }),
);

beforeAll(async () => {
  const gc = cm.controllers[0] as GarbageCollector;
  await gc.synced();
});

describe("garbage collector", () => {
  it("deletes the dependents of a deleted owner (Background) and nothing else", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    await configMap(env.client, ns, "dep-1", { owners: [refTo(owner)] });
    await configMap(env.client, ns, "dep-2", { owners: [refTo(owner, { controller: true })] });
    await env.client.create({
      ...SECRET,
      metadata: { name: "dep-secret", namespace: ns, ownerReferences: [refTo(owner)] },
    });
    const other = await configMap(env.client, ns, "other-owner");
    await configMap(env.client, ns, "two-owners", { owners: [refTo(owner), refTo(other)] });
    await configMap(env.client, ns, "bystander");
    await sleep(100);
    // Live owners: nothing is collected.
    expect(await gone(env.client, CM, "dep-1", ns)).toBe(false);

    await env.client.delete(CM, "owner", ns);
    await eventually(
      async () =>
        (await gone(env.client, CM, "dep-1", ns)) &&
        (await gone(env.client, CM, "dep-2", ns)) &&
        (await gone(env.client, SECRET, "dep-secret", ns)),
      "dependents deleted",
    );
    // A dependent with another live owner stays, without the reference to the gone one.
    const two = await eventually(async () => {
      const o = await find(env.client, CM, "two-owners", ns);
      return o?.metadata.ownerReferences?.length === 1 ? o : undefined;
    }, "dangling reference removed");
    expect(two.metadata.ownerReferences?.[0].uid).toBe(other.metadata.uid);
    expect(await gone(env.client, CM, "bystander", ns)).toBe(false);
    expect(await gone(env.client, CM, "other-owner", ns)).toBe(false);
  });

  it("keeps a Foreground owner until its blocking dependents are gone, transitively", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    const child = await configMap(env.client, ns, "child", {
      owners: [refTo(owner, { blockOwnerDeletion: true })],
    });
    await configMap(env.client, ns, "grandchild", {
      owners: [refTo(child, { blockOwnerDeletion: true })],
      finalizers: ["example.com/hold"],
    });
    await configMap(env.client, ns, "loose-child", { owners: [refTo(owner)] });

    await env.client.delete(CM, "owner", ns, { propagationPolicy: "Foreground" });
    // The grandchild's own finalizer holds the whole chain.
    await eventually(async () => {
      const g = await find(env.client, CM, "grandchild", ns);
      return g?.metadata.deletionTimestamp !== undefined;
    }, "grandchild being deleted");
    const c = await find(env.client, CM, "child", ns);
    expect(c?.metadata.deletionTimestamp).toBeDefined();
    expect(c?.metadata.finalizers).toContain("foregroundDeletion");
    const o = await find(env.client, CM, "owner", ns);
    expect(o?.metadata.finalizers).toContain("foregroundDeletion");
    await eventually(
      () => gone(env.client, CM, "loose-child", ns),
      "non-blocking dependent deleted",
    );
    await sleep(200);
    expect(await gone(env.client, CM, "owner", ns)).toBe(false);

    await clearFinalizers(env.client, CM, "grandchild", ns);
    await eventually(
      async () =>
        (await gone(env.client, CM, "grandchild", ns)) &&
        (await gone(env.client, CM, "child", ns)) &&
        (await gone(env.client, CM, "owner", ns)),
      "foreground chain deleted",
    );
  });

  it("finishes a Foreground deletion at once when no dependent blocks", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    await configMap(env.client, ns, "dep", { owners: [refTo(owner)] });
    await env.client.delete(CM, "owner", ns, { propagationPolicy: "Foreground" });
    await eventually(
      async () =>
        (await gone(env.client, CM, "owner", ns)) && (await gone(env.client, CM, "dep", ns)),
      "owner and dependent deleted",
    );
  });

  it("orphans dependents (Orphan): they lose the reference and stay", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    const keep = await configMap(env.client, ns, "keep");
    await configMap(env.client, ns, "dep-1", { owners: [refTo(owner, { controller: true })] });
    await configMap(env.client, ns, "dep-2", { owners: [refTo(keep), refTo(owner)] });
    await env.client.delete(CM, "owner", ns, { propagationPolicy: "Orphan" });
    await eventually(() => gone(env.client, CM, "owner", ns), "owner deleted");
    const d1 = await find(env.client, CM, "dep-1", ns);
    expect(d1).toBeDefined();
    expect(d1?.metadata.ownerReferences ?? []).toEqual([]);
    const d2 = await find(env.client, CM, "dep-2", ns);
    expect(d2?.metadata.ownerReferences?.map((r) => r.uid)).toEqual([keep.metadata.uid]);
    await sleep(300);
    expect(await gone(env.client, CM, "dep-1", ns)).toBe(false);
  });

  it("does not let a new object that reuses a name adopt old dependents", async () => {
    const ns = await freshNamespace(env.client);
    const first = await configMap(env.client, ns, "owner");
    await configMap(env.client, ns, "old-dep", { owners: [refTo(first)] });
    await env.client.delete(CM, "owner", ns);
    const second = await configMap(env.client, ns, "owner");
    expect(second.metadata.uid).not.toBe(first.metadata.uid);
    await configMap(env.client, ns, "new-dep", { owners: [refTo(second)] });
    await eventually(() => gone(env.client, CM, "old-dep", ns), "old dependent deleted");
    await sleep(300);
    expect((await find(env.client, CM, "owner", ns))?.metadata.uid).toBe(second.metadata.uid);
    expect(await gone(env.client, CM, "new-dep", ns)).toBe(false);
  });

  it("deletes a dependent whose owner's name now belongs to another UID", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    await configMap(env.client, ns, "dep", {
      owners: [{ ...refTo(owner), uid: "00000000-0000-4000-8000-000000000000" }],
    });
    await eventually(() => gone(env.client, CM, "dep", ns), "dependent of an absent UID deleted");
    expect(await gone(env.client, CM, "owner", ns)).toBe(false);
  });

  it("never deletes a cluster-scoped object naming a namespaced owner, and says so", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    const name = `${ns}-dependent`;
    const dependent = await env.client.create<KubeObject>({
      ...NS,
      metadata: { name, ownerReferences: [refTo(owner)] },
    });
    await env.client.delete(CM, "owner", ns);
    const ev = await eventually(async () => {
      const list = await env.client.list<KubeObject>(EVENT, { namespace: "default" });
      return list.items.find(
        (e) =>
          (e.involvedObject as { uid?: string }).uid === dependent.metadata.uid &&
          e.reason === "OwnerRefInvalidNamespace",
      );
    }, "OwnerRefInvalidNamespace event");
    expect(ev.type).toBe("Warning");
    expect(String(ev.message)).toContain(owner.metadata.uid);
    await sleep(300);
    expect(await gone(env.client, NS, name)).toBe(false);
  });

  it("reports an owner reference whose UID lives in another namespace", async () => {
    const a = await freshNamespace(env.client);
    const b = await freshNamespace(env.client);
    const owner = await configMap(env.client, a, "owner");
    const dep = await configMap(env.client, b, "owner-elsewhere", { owners: [refTo(owner)] });
    const ev = await eventually(async () => {
      const list = await env.client.list<KubeObject>(EVENT, { namespace: b });
      return list.items.find(
        (e) =>
          (e.involvedObject as { uid?: string }).uid === dep.metadata.uid &&
          e.reason === "OwnerRefInvalidNamespace",
      );
    }, "OwnerRefInvalidNamespace event");
    expect(String(ev.message)).toContain(`does not exist in namespace "${b}"`);
    // As in Kubernetes, the owner counts as absent in the dependent's namespace.
    await eventually(() => gone(env.client, CM, "owner-elsewhere", b), "dependent collected");
    expect(await gone(env.client, CM, "owner", a)).toBe(false);
  });

  it("collects with one DELETE per dependent and no reads", async () => {
    const ns = await freshNamespace(env.client);
    const owner = await configMap(env.client, ns, "owner");
    const n = 40;
    for (let i = 0; i < n; i++)
      await configMap(env.client, ns, `dep-${i}`, { owners: [refTo(owner)] });
    await sleep(200);
    const stats = cm.manager.client.stats;
    const before = { ...stats.byVerb };
    await env.client.delete(CM, "owner", ns);
    await eventually(async () => {
      const list = await env.client.list<KubeObject>(CM, { namespace: ns });
      return list.items.length === 0;
    }, "all dependents deleted");
    const delta = (verb: string) => (stats.byVerb[verb] ?? 0) - (before[verb] ?? 0);
    expect(delta("delete")).toBe(n);
    expect(delta("get")).toBe(0);
    expect(delta("list")).toBe(0);
  });

  it("follows kinds added after it started: custom resources as owners and dependents", async () => {
    await installCrd(env.client, schemalessCrd("widgets", "Widget"));
    await installCrd(
      env.client,
      schemalessCrd("clusterthings", "ClusterThing", { scope: "Cluster" }),
    );
    const WIDGET = { apiVersion: "example.com/v1", kind: "Widget" };
    const THING = { apiVersion: "example.com/v1", kind: "ClusterThing" };
    const ns = await freshNamespace(env.client);
    const widget = await env.client.create<KubeObject>({
      ...WIDGET,
      metadata: { name: "w", namespace: ns },
      spec: { size: 1 },
    });
    await configMap(env.client, ns, "dep-of-widget", { owners: [refTo(widget)] });
    const cmOwner = await configMap(env.client, ns, "cm-owner");
    await env.client.create({
      ...WIDGET,
      metadata: { name: "widget-dep", namespace: ns, ownerReferences: [refTo(cmOwner)] },
    });
    const thing = await env.client.create<KubeObject>({
      ...THING,
      metadata: { name: `${ns}-thing` },
    });
    await configMap(env.client, ns, "dep-of-thing", { owners: [refTo(thing)] });
    await sleep(300);
    expect(await gone(env.client, CM, "dep-of-widget", ns)).toBe(false);
    expect(await gone(env.client, CM, "dep-of-thing", ns)).toBe(false);

    await env.client.delete(WIDGET, "w", ns);
    await env.client.delete(CM, "cm-owner", ns);
    await env.client.delete(THING, `${ns}-thing`);
    await eventually(
      async () =>
        (await gone(env.client, CM, "dep-of-widget", ns)) &&
        (await gone(env.client, WIDGET, "widget-dep", ns)) &&
        (await gone(env.client, CM, "dep-of-thing", ns)),
      "dependents of and among custom resources collected",
    );
  });
  it("monitors through the manager's cache, and drops a kind's monitor when it stops being served", async () => {
    const cache = cm.manager.cache;
    const monitored = () =>
      cache
        .health()
        .filter((h) => h.scope.metadataOnly)
        .map((h) => `${h.apiVersion}/${h.kind}`);
    // Built-in kinds are monitored by informers of the shared cache, health-checked by the manager.
    expect(monitored()).toContain("v1/ConfigMap");
    await installCrd(env.client, schemalessCrd("gadgets", "Gadget"));
    await eventually(
      () => monitored().includes("example.com/v1/Gadget"),
      "a monitor for the new kind",
    );
    const gc = cm.controllers[0] as GarbageCollector;
    await eventually(() => gc.ready().ok, "the collector ready with the new monitor synced");
    await env.client.delete(
      { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" },
      "gadgets.example.com",
    );
    await eventually(
      () => !monitored().includes("example.com/v1/Gadget"),
      "the monitor removed from the cache",
    );
    expect(monitored()).toContain("v1/ConfigMap");
  });
});
