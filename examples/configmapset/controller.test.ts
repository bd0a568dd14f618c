/**
 * The ConfigMapSet controller against a real Setpoint apiserver (startTestEnv),
 * through the HTTP API only: it converges on create, on namespace label
 * changes, on template changes and on manual drift, reports conflicts and
 * invalid selectors, owns what it creates, and is quiet at steady state.
 */

import { deepClone, type KubeObject } from "@setpoint/api";
import {
  type Client,
  findCondition,
  isNotFound,
  Manager,
  retryOnConflict,
  silentLogger,
} from "@setpoint/runtime";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { SET_LABEL, TEMPLATE_LABELS_ANNOTATION } from "./configmap.ts";
import { addConfigMapSetController, MANAGED_SCOPE } from "./controller.ts";
import {
  type ConfigMap,
  ConfigMapKind,
  type ConfigMapSet,
  ConfigMapSetKind,
  type ConfigMapSetSpec,
  configMapSet,
  configMapSetCrd,
  type Namespace,
  NamespaceKind,
} from "./types.ts";

const WAIT = { timeout: 10_000, interval: 20 };

let env: TestEnv;
let mgr: Manager;
let user: Client;
let stop: AbortController;

beforeAll(async () => {
  // The environment runs the garbage collector and the namespace controller too.
  env = await startTestEnv({ crds: [configMapSetCrd()] });
  user = env.client;
  mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  addConfigMapSetController(mgr);
  stop = new AbortController();
  await mgr.start(stop.signal);
});

afterAll(async () => {
  stop?.abort();
  await mgr?.done;
  await env?.stop();
});

let seq = 0;
/** A fresh name per test, so tests do not see each other's objects. */
function unique(prefix: string): string {
  seq++;
  return `${prefix}-${seq}`;
}

async function createNamespace(name: string, labels: Record<string, string>): Promise<void> {
  await user.create<Namespace>({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name, labels },
  });
}

async function relabelNamespace(name: string, labels: Record<string, string>): Promise<void> {
  await retryOnConflict(async () => {
    const ns = await user.get(NamespaceKind, name);
    ns.metadata.labels = labels;
    await user.update(ns);
  });
}

async function getConfigMap(name: string, ns: string): Promise<ConfigMap | undefined> {
  try {
    return await user.get(ConfigMapKind, name, ns);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

async function getSet(name: string): Promise<ConfigMapSet> {
  return user.get(ConfigMapSetKind, name);
}

async function updateSpec(name: string, change: (spec: ConfigMapSetSpec) => void): Promise<void> {
  await retryOnConflict(async () => {
    const set = await getSet(name);
    change(set.spec);
    await user.update(set);
  });
}

/** Waits until the set's status has caught up with its spec and says Ready. */
async function waitReady(name: string, matching: number): Promise<ConfigMapSet> {
  let got!: ConfigMapSet;
  await vi.waitFor(async () => {
    got = await getSet(name);
    expect(got.status?.observedGeneration).toBe(got.metadata.generation);
    expect(got.status?.matchingNamespaces).toBe(matching);
    expect(got.status?.readyConfigMaps).toBe(matching);
    expect(findCondition(got.status?.conditions, "Ready")?.status).toBe("True");
  }, WAIT);
  return got;
}

describe("ConfigMapSet controller", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0)) await c().catch(() => {});
  });
  async function createSet(name: string, spec: ConfigMapSetSpec): Promise<ConfigMapSet> {
    const set = await user.create(configMapSet(name, spec));
    cleanup.push(() => user.delete(ConfigMapSetKind, name));
    return set;
  }

  it("creates an owned ConfigMap in every matching namespace, and only there", async () => {
    const team = unique("team");
    const [a, b, c] = [unique("ns-a"), unique("ns-b"), unique("ns-c")];
    await createNamespace(a, { team });
    await createNamespace(b, { team, env: "prod" });
    await createNamespace(c, { team: "other" });
    const name = unique("settings");
    const set = await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { "log.level": "info" }, labels: { app: "demo" } },
    });

    const ready = await waitReady(name, 2);
    const cond = findCondition(ready.status?.conditions, "Ready");
    expect(cond?.reason).toBe("ConfigMapsReady");
    expect(cond?.observedGeneration).toBe(1);
    for (const ns of [a, b]) {
      const cm = await getConfigMap(name, ns);
      expect(cm?.data).toEqual({ "log.level": "info" });
      expect(cm?.metadata.labels).toEqual({ app: "demo", [SET_LABEL]: name });
      expect(cm?.metadata.ownerReferences).toEqual([
        {
          apiVersion: ConfigMapSetKind.apiVersion,
          kind: "ConfigMapSet",
          name,
          uid: set.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    expect(await getConfigMap(name, c)).toBeUndefined();
  });

  it("follows namespace labels: adds where a namespace starts matching, removes where it stops", async () => {
    const team = unique("team");
    const [a, b] = [unique("ns-a"), unique("ns-b")];
    await createNamespace(a, { team });
    await createNamespace(b, {});
    const name = unique("follow");
    await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { k: "v" } },
    });
    await waitReady(name, 1);

    await relabelNamespace(b, { team });
    await waitReady(name, 2);
    expect((await getConfigMap(name, b))?.data).toEqual({ k: "v" });

    await relabelNamespace(a, { team: "elsewhere" });
    await waitReady(name, 1);
    await vi.waitFor(async () => expect(await getConfigMap(name, a)).toBeUndefined(), WAIT);

    // A namespace created already matching gets one too.
    const c = unique("ns-c");
    await createNamespace(c, { team });
    await waitReady(name, 2);
    expect(await getConfigMap(name, c)).toBeDefined();
  });

  it("applies template changes, with observedGeneration following generation", async () => {
    const team = unique("team");
    const ns = unique("ns");
    await createNamespace(ns, { team });
    const name = unique("tmpl");
    await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { a: "1" }, labels: { keep: "yes", drop: "soon" } },
    });
    await waitReady(name, 1);
    // Someone else labels the ConfigMap too: that label is not the set's to remove.
    await retryOnConflict(async () => {
      const cm = (await getConfigMap(name, ns))!;
      cm.metadata.labels = { ...cm.metadata.labels, "added-by": "someone" };
      await user.update(cm);
    });

    await updateSpec(name, (spec) => {
      spec.template = { data: { a: "2", b: "3" }, labels: { keep: "yes" } };
    });
    const set = await waitReady(name, 1);
    expect(set.metadata.generation).toBe(2);
    expect(set.status?.observedGeneration).toBe(2);
    expect(findCondition(set.status?.conditions, "Ready")?.observedGeneration).toBe(2);
    await vi.waitFor(async () => {
      const cm = (await getConfigMap(name, ns))!;
      expect(cm.data).toEqual({ a: "2", b: "3" });
      expect(cm.metadata.labels).toEqual({ keep: "yes", "added-by": "someone", [SET_LABEL]: name });
      expect(cm.metadata.annotations?.[TEMPLATE_LABELS_ANNOTATION]).toBe("keep");
    }, WAIT);

    // Emptying the template empties the data.
    await updateSpec(name, (spec) => {
      spec.template = {};
    });
    await waitReady(name, 1);
    await vi.waitFor(async () => {
      const cm = (await getConfigMap(name, ns))!;
      expect(cm.data ?? {}).toEqual({});
      expect(cm.metadata.labels).toEqual({ "added-by": "someone", [SET_LABEL]: name });
      expect(cm.metadata.annotations?.[TEMPLATE_LABELS_ANNOTATION]).toBeUndefined();
    }, WAIT);
  });

  it("puts manual drift right: edited data, deleted ConfigMap, stripped label and ownerReference", async () => {
    const team = unique("team");
    const ns = unique("ns");
    await createNamespace(ns, { team });
    const name = unique("drift");
    const set = await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { mode: "strict" } },
    });
    await waitReady(name, 1);
    const isRight = async () => {
      const cm = await getConfigMap(name, ns);
      expect(cm?.data).toEqual({ mode: "strict" });
      expect(cm?.metadata.labels?.[SET_LABEL]).toBe(name);
      expect(cm?.metadata.ownerReferences?.[0]?.uid).toBe(set.metadata.uid);
      return cm!;
    };

    // Edited data.
    await retryOnConflict(async () => {
      const cm = (await getConfigMap(name, ns))!;
      cm.data = { mode: "lax", extra: "x" };
      await user.update(cm);
    });
    await vi.waitFor(isRight, WAIT);

    // Deleted.
    await user.delete(ConfigMapKind, name, ns);
    const recreated = await vi.waitFor(isRight, WAIT);
    expect(recreated.metadata.uid).toBeTruthy();

    // The label the controller's cache selects on, removed: the object leaves the cache.
    await retryOnConflict(async () => {
      const cm = (await getConfigMap(name, ns))!;
      delete cm.metadata.labels?.[SET_LABEL];
      await user.update(cm);
    });
    await vi.waitFor(isRight, WAIT);

    // The ownerReference removed.
    await retryOnConflict(async () => {
      const cm = (await getConfigMap(name, ns))!;
      cm.metadata.ownerReferences = [];
      await user.update(cm);
    });
    await vi.waitFor(isRight, WAIT);
    await waitReady(name, 1);
  });

  it("leaves a ConfigMap it does not control alone and says so in Ready", async () => {
    const team = unique("team");
    const [mine, theirs] = [unique("ns-mine"), unique("ns-theirs")];
    await createNamespace(mine, { team });
    await createNamespace(theirs, { team });
    const name = unique("shared");
    await user.create<ConfigMap>({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: theirs },
      data: { owner: "a person" },
    });
    await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { k: "v" } },
    });

    await vi.waitFor(async () => {
      const set = await getSet(name);
      expect(set.status?.matchingNamespaces).toBe(2);
      expect(set.status?.readyConfigMaps).toBe(1);
      const ready = findCondition(set.status?.conditions, "Ready");
      expect(ready?.status).toBe("False");
      expect(ready?.reason).toBe("ConfigMapConflict");
      expect(ready?.message).toContain(theirs);
    }, WAIT);
    const theirsCm = await getConfigMap(name, theirs);
    expect(theirsCm?.data).toEqual({ owner: "a person" });
    expect(theirsCm?.metadata.ownerReferences).toBeUndefined();
    expect((await getConfigMap(name, mine))?.data).toEqual({ k: "v" });
  });

  it("reports a selector the API cannot parse as a terminal error: a condition and a Warning Event", async () => {
    const name = unique("invalid");
    await createSet(name, { namespaceSelector: { matchLabels: { team: "not a label value!" } } });
    await vi.waitFor(async () => {
      const set = await getSet(name);
      const ready = findCondition(set.status?.conditions, "Ready");
      expect(ready?.status).toBe("False");
      expect(ready?.reason).toBe("InvalidSelector");
      expect(set.status?.observedGeneration).toBe(1);
    }, WAIT);
    await vi.waitFor(async () => {
      const events = await user.list<KubeObject & { reason?: string; type?: string }>(
        { apiVersion: "v1", kind: "Event" },
        { namespace: "default" },
      );
      const ours = events.items.filter(
        (e) => (e.involvedObject as { name?: string } | undefined)?.name === name,
      );
      expect(ours.map((e) => [e.type, e.reason])).toContainEqual(["Warning", "InvalidSelector"]);
    }, WAIT);

    // Fixing the spec reconciles it again.
    await updateSpec(name, (spec) => {
      spec.namespaceSelector = { matchLabels: { team: unique("nobody") } };
    });
    await waitReady(name, 0);
  });

  it("names the set as controlling owner, so deleting the set deletes its ConfigMaps", async () => {
    const team = unique("team");
    const [a, b] = [unique("ns-a"), unique("ns-b")];
    await createNamespace(a, { team });
    await createNamespace(b, { team });
    const name = unique("doomed");
    const set = await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { k: "v" } },
    });
    await waitReady(name, 2);
    const owned = [await getConfigMap(name, a), await getConfigMap(name, b)];
    for (const cm of owned) {
      const ref = cm?.metadata.ownerReferences?.find((r) => r.controller);
      expect(ref?.uid).toBe(set.metadata.uid);
      expect(ref?.blockOwnerDeletion).toBe(true);
    }
    await user.delete(ConfigMapSetKind, name);
    // The garbage collector deletes the dependents of an owner that is gone.
    await vi.waitFor(async () => {
      expect(await getConfigMap(name, a)).toBeUndefined();
      expect(await getConfigMap(name, b)).toBeUndefined();
    }, WAIT);
    // The controller does not recreate anything for a set that is gone.
    const before = mgr.client.stats.byVerb.create ?? 0;
    await new Promise((r) => setTimeout(r, 200));
    expect(mgr.client.stats.byVerb.create ?? 0).toBe(before);
    expect(await getConfigMap(name, a)).toBeUndefined();
  });

  it("stops counting a namespace being deleted, which goes with its ConfigMap", async () => {
    const team = unique("team");
    const [stays, goes] = [unique("ns-stays"), unique("ns-goes")];
    await createNamespace(stays, { team });
    await createNamespace(goes, { team });
    const name = unique("shrink");
    await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { k: "v" } },
    });
    await waitReady(name, 2);
    await user.delete(NamespaceKind, goes);
    await waitReady(name, 1);
    // The namespace controller empties it (our ConfigMap included) and it goes.
    await vi.waitFor(async () => {
      await expect(user.get(NamespaceKind, goes)).rejects.toSatisfy(isNotFound);
    }, WAIT);
    expect((await getConfigMap(name, stays))?.data).toEqual({ k: "v" });
  });

  it("writes nothing at steady state, even when every key is reconciled again", async () => {
    const team = unique("team");
    for (let i = 0; i < 3; i++) await createNamespace(unique("quiet"), { team });
    const name = unique("quiet");
    await createSet(name, {
      namespaceSelector: { matchLabels: { team } },
      template: { data: { k: "v" } },
    });
    await waitReady(name, 3);
    // Let the last writes' own watch events come back, then count.
    await new Promise((r) => setTimeout(r, 300));
    const writes = () =>
      ["create", "update", "patch", "delete"].reduce(
        (n, v) => n + (mgr.client.stats.byVerb[v] ?? 0),
        0,
      );
    const reconciles = async () => {
      const text = await mgr.metrics.text();
      const line = text
        .split("\n")
        .find((l) =>
          l.startsWith(
            'controller_runtime_reconcile_total{controller="configmapset",result="success"}',
          ),
        );
      return Number(line?.split(" ").pop() ?? 0);
    };
    const before = writes();
    const reconcilesBefore = await reconciles();
    for (const c of mgr.controllers) c.enqueueAll();
    await new Promise((r) => setTimeout(r, 500));
    expect(await reconciles()).toBeGreaterThan(reconcilesBefore);
    expect(writes()).toBe(before);
    // Its reads of ConfigMaps used the owns() watch's informer: no second, unscoped one.
    const configMapInformers = mgr.cache.health().filter((h) => h.kind === "ConfigMap");
    expect(configMapInformers.map((h) => h.scope)).toEqual([MANAGED_SCOPE]);
  });
});

describe("ConfigMapSet template (pure)", () => {
  it("keeps its hands off what it does not own", async () => {
    const { applyTemplate } = await import("./configmap.ts");
    const set = configMapSet("s", {
      namespaceSelector: {},
      template: { data: { a: "1" }, labels: { x: "1" } },
    });
    set.metadata.uid = "uid-1";
    const cm: ConfigMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "s",
        namespace: "n",
        uid: "cm-uid",
        labels: { [SET_LABEL]: "s", theirs: "t" },
        annotations: { note: "keep" },
      },
      binaryData: { b: "AA==" },
    };
    applyTemplate(set, cm);
    const once = deepClone(cm);
    applyTemplate(set, cm);
    expect(cm).toEqual(once);
    expect(cm.binaryData).toEqual({ b: "AA==" });
    expect(cm.metadata.labels).toEqual({ [SET_LABEL]: "s", theirs: "t", x: "1" });
    expect(cm.metadata.annotations).toEqual({ note: "keep", [TEMPLATE_LABELS_ANNOTATION]: "x" });
  });
});
