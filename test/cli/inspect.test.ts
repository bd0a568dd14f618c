/**
 * The pure logic behind `setpoint finalizers` and `setpoint doctor`: durations,
 * resource name resolution, lease liveness, finalizer attribution, the guarded
 * clear patch, observedGeneration lag, write sampling, published reconcile
 * counts, Warning Event grouping, tables and the doctor's verdicts.
 */

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import { FINALIZERS_ANNOTATION, loadKubeconfig, TERMINAL_ERROR_ACTION } from "@setpoint/runtime";
import { describe, expect, it } from "vitest";
import { applyJsonPatch } from "../../packages/api/src/patch/json.ts";
import { parseTarget } from "../../src/cli/finalizers.ts";
import {
  apiserverIdentities,
  attributeFinalizer,
  clearPatch,
  controllerLeases,
  type DoctorFacts,
  describeHandling,
  describeIdentity,
  diagnose,
  etcdEndpointsOf,
  formatAge,
  generationLags,
  HOT_LOOP_MIN_WRITES,
  isUnhandled,
  lastSpecWrite,
  leaseInfo,
  parseDuration,
  parseReconcileStats,
  planClear,
  RECONCILE_STATS_ANNOTATION,
  recentWarnings,
  reconcileHotKeys,
  renderReport,
  resolveResource,
  type ServedResource,
  stuckObjects,
  WriteSampler,
  whoAmI,
} from "../../src/cli/inspect/index.ts";

import { parseOutputFormat, renderTable } from "../../src/cli/output.ts";
import { UsageError } from "../../src/cli/usage-error.ts";

const NOW = Date.parse("2026-01-01T12:00:00Z");
const iso = (msBeforeNow: number) => new Date(NOW - msBeforeNow).toISOString();

function served(over: Partial<ServedResource> & { kind: string; plural: string }): ServedResource {
  return {
    group: "",
    version: "v1",
    apiVersion: "v1",
    singular: over.kind.toLowerCase(),
    shortNames: [],
    namespaced: true,
    verbs: ["get", "list", "watch", "patch"],
    subresources: [],
    ...over,
  };
}

const CONFIGMAPS = served({ kind: "ConfigMap", plural: "configmaps", shortNames: ["cm"] });
const WIDGETS = served({
  group: "example.com",
  apiVersion: "example.com/v1",
  kind: "Widget",
  plural: "widgets",
  shortNames: ["wd"],
  subresources: ["status"],
});
const OTHER_WIDGETS = served({
  group: "other.io",
  apiVersion: "other.io/v2",
  version: "v2",
  kind: "Widget",
  plural: "widgets",
});
const CORE_EVENTS = served({ kind: "Event", plural: "events", shortNames: ["ev"] });
const GROUP_EVENTS = served({
  group: "events.k8s.io",
  apiVersion: "events.k8s.io/v1",
  kind: "Event",
  plural: "events",
});

function lease(
  name: string,
  opts: {
    holder?: string;
    renewedAgoMs?: number;
    seconds?: number;
    finalizers?: string;
    ns?: string;
  },
): KubeObject {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name,
      namespace: opts.ns ?? "kube-system",
      ...(opts.finalizers ? { annotations: { [FINALIZERS_ANNOTATION]: opts.finalizers } } : {}),
    },
    spec: {
      holderIdentity: opts.holder ?? "",
      leaseDurationSeconds: opts.seconds ?? 15,
      renewTime: iso(opts.renewedAgoMs ?? 0),
    },
  };
}

describe("durations", () => {
  it("parses compound durations and rejects junk", () => {
    expect(parseDuration("10m", "--x")).toBe(600_000);
    expect(parseDuration("1h30m", "--x")).toBe(5_400_000);
    expect(parseDuration("500ms", "--x")).toBe(500);
    expect(parseDuration("2.5s", "--x")).toBe(2_500);
    expect(parseDuration("0", "--x")).toBe(0);
    for (const bad of ["", "10", "m", "10x", "5m junk", "-1s"]) {
      expect(() => parseDuration(bad, "--older-than")).toThrow(UsageError);
    }
    expect(() => parseDuration("10", "--older-than")).toThrow(/--older-than/);
  });

  it("formats ages as kubectl does", () => {
    expect(formatAge(850)).toBe("850ms");
    expect(formatAge(3_200)).toBe("3s");
    expect(formatAge(252_000)).toBe("4m12s");
    expect(formatAge(600_000)).toBe("10m");
    expect(formatAge(7_500_000)).toBe("2h5m");
    expect(formatAge(3 * 86_400_000 + 4 * 3_600_000)).toBe("3d4h");
    expect(formatAge(Number.NaN)).toBe("?");
  });
});

describe("resources", () => {
  it("resolves kinds, plurals, short names and group-qualified names", () => {
    const all = [CONFIGMAPS, WIDGETS, OTHER_WIDGETS, CORE_EVENTS, GROUP_EVENTS];
    expect(resolveResource(all, "cm")).toBe(CONFIGMAPS);
    expect(resolveResource(all, "ConfigMap")).toBe(CONFIGMAPS);
    expect(resolveResource(all, "wd")).toBe(WIDGETS);
    expect(resolveResource(all, "widgets.example.com")).toBe(WIDGETS);
    expect(resolveResource(all, "Widget.other.io")).toBe(OTHER_WIDGETS);
    expect(resolveResource(all, "widget.v2.other.io")).toBe(OTHER_WIDGETS);
    // Core wins over a group, as kubectl resolves it.
    expect(resolveResource(all, "events")).toBe(CORE_EVENTS);
    expect(() => resolveResource(all, "widgets")).toThrow(/ambiguous.*widgets\.example\.com/);
    expect(() => resolveResource(all, "gadgets")).toThrow(/does not serve/);
  });

  it("parses KIND/NAME and KIND NAME", () => {
    expect(parseTarget(["widgets.example.com/w1"])).toEqual({
      kind: "widgets.example.com",
      name: "w1",
    });
    expect(parseTarget(["cm", "x"])).toEqual({ kind: "cm", name: "x" });
    expect(() => parseTarget(["cm"])).toThrow(UsageError);
    expect(() => parseTarget(["cm/a/b"])).toThrow(UsageError);
  });
});

describe("leases and finalizer attribution", () => {
  const leases = controllerLeases(
    [
      lease("webapp", { holder: "pod-a", renewedAgoMs: 3_000, finalizers: "example.com/cleanup" }),
      lease("crashed", { holder: "pod-b", renewedAgoMs: 60_000, finalizers: "example.com/gone" }),
      lease("stopped", { renewedAgoMs: 1_000, finalizers: "example.com/stopped" }),
      lease("gc", { holder: "cm-1", renewedAgoMs: 1_000, finalizers: "foregroundDeletion,orphan" }),
      lease("node-1", { holder: "node-1", ns: "kube-node-lease" }),
    ],
    NOW,
  );

  it("tells live from expired and released, and leaves node heartbeats out", () => {
    expect(leases.map((l) => [l.name, l.state])).toEqual([
      ["crashed", "expired"],
      ["gc", "live"],
      ["stopped", "released"],
      ["webapp", "live"],
    ]);
    expect(leaseInfo(lease("x", { holder: "h", renewedAgoMs: 15_000 }), NOW).state).toBe("live");
    expect(leaseInfo(lease("x", { holder: "h", renewedAgoMs: 15_001 }), NOW).state).toBe("expired");
  });

  it("attributes finalizers to live controllers only", () => {
    const handled = attributeFinalizer("example.com/cleanup", "metadata", leases);
    expect(handled.state).toBe("handled");
    expect(describeHandling(handled)).toBe(
      "example.com/cleanup (handled by webapp, leader pod-a, renewed 3s ago)",
    );
    for (const f of ["example.com/gone", "example.com/stopped", "example.com/never"]) {
      const h = attributeFinalizer(f, "metadata", leases);
      expect(h.state).toBe("abandoned");
      expect(describeHandling(h)).toBe(`${f} (ABANDONED: no live controller declares it)`);
    }
    const orphan = attributeFinalizer("orphan", "metadata", leases);
    expect(orphan).toMatchObject({ state: "builtin", builtin: "garbage collector" });
    expect(describeHandling(orphan)).toContain("handled by gc, leader cm-1");
    // Built-in loops run in the controller manager: without its live Lease, nothing removes them.
    const unrun = attributeFinalizer("kubernetes", "spec", []);
    expect(describeHandling(unrun)).toBe(
      "kubernetes [spec.finalizers] (built-in: namespace controller; NOT RUNNING: no live setpoint-controller-manager Lease)",
    );
    expect(isUnhandled(unrun)).toBe(true);
    const cm = controllerLeases(
      [lease("setpoint-controller-manager", { holder: "cm-0", renewedAgoMs: 2_000 })],
      NOW,
    );
    const run = attributeFinalizer("kubernetes", "spec", cm);
    expect(describeHandling(run)).toBe(
      "kubernetes [spec.finalizers] (built-in: namespace controller; handled by setpoint-controller-manager, leader cm-0, renewed 2s ago)",
    );
    expect(isUnhandled(run)).toBe(false);
    // A controller manager that declares its finalizers is taken at its word.
    const declaring = controllerLeases(
      [
        lease("setpoint-controller-manager", {
          holder: "cm-0",
          finalizers: "foregroundDeletion,orphan",
        }),
      ],
      NOW,
    );
    expect(attributeFinalizer("orphan", "metadata", declaring).handlers).toHaveLength(1);
    expect(isUnhandled(attributeFinalizer("kubernetes", "spec", declaring))).toBe(true);
    // The apiserver removes its own finalizer.
    const crd = attributeFinalizer("customresourcecleanup.apiextensions.k8s.io", "metadata", []);
    expect(describeHandling(crd)).toBe(
      "customresourcecleanup.apiextensions.k8s.io (built-in: apiserver CRD cleanup)",
    );
    expect(isUnhandled(crd)).toBe(false);
    expect(isUnhandled(handled)).toBe(false);
    expect(isUnhandled(attributeFinalizer("example.com/never", "metadata", leases))).toBe(true);
  });

  it("lists objects in deletion once, oldest first, with a Namespace's spec finalizers", () => {
    const cm: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "a",
        namespace: "default",
        uid: "u1",
        deletionTimestamp: iso(60_000),
        finalizers: ["example.com/cleanup", "example.com/never"],
      },
    };
    const fresh: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "b", namespace: "default", uid: "u2", deletionTimestamp: iso(1_000) },
    };
    const alive: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "default", uid: "u3", finalizers: ["x.io/y"] },
    };
    const ns: KubeObject = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "doomed", uid: "u4", deletionTimestamp: iso(120_000) },
      spec: { finalizers: ["kubernetes"] },
    };
    const ev: KubeObject = {
      apiVersion: "v1",
      kind: "Event",
      metadata: {
        name: "e",
        namespace: "default",
        uid: "u5",
        deletionTimestamp: iso(5_000),
        finalizers: ["f.io/x"],
      },
    };
    const items = [
      { resource: CONFIGMAPS, obj: cm },
      { resource: CONFIGMAPS, obj: fresh },
      { resource: CONFIGMAPS, obj: alive },
      { resource: served({ kind: "Namespace", plural: "namespaces", namespaced: false }), obj: ns },
      { resource: CORE_EVENTS, obj: ev },
      { resource: GROUP_EVENTS, obj: { ...ev, apiVersion: "events.k8s.io/v1" } },
    ];
    const all = stuckObjects(items, leases, NOW);
    expect(all.map((s) => s.name)).toEqual(["doomed", "a", "e", "b"]);
    expect(all[0].finalizers).toMatchObject([
      { finalizer: "kubernetes", place: "spec", state: "builtin" },
    ]);
    expect(all[1].finalizers.map((f) => f.state)).toEqual(["handled", "abandoned"]);
    expect(all[1].deletingForMs).toBe(60_000);
    expect(stuckObjects(items, leases, NOW, 30_000).map((s) => s.name)).toEqual(["doomed", "a"]);
  });
});

describe("clearing one finalizer", () => {
  const obj: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "a",
      namespace: "default",
      uid: "u1",
      deletionTimestamp: iso(1_000),
      finalizers: ["a.io/one", "b.io/two"],
    },
  };

  it("plans what happens next", () => {
    const one = planClear(obj, "a.io/one");
    expect(one).toMatchObject({ index: 0, remaining: ["b.io/two"], deletesObject: false });
    const last = planClear(
      { ...obj, metadata: { ...obj.metadata, finalizers: ["b.io/two"] } },
      "b.io/two",
    );
    expect(last?.deletesObject).toBe(true);
    const notDeleting = planClear(
      {
        ...obj,
        metadata: { ...obj.metadata, deletionTimestamp: undefined, finalizers: ["b.io/two"] },
      },
      "b.io/two",
    );
    expect(notDeleting).toMatchObject({ beingDeleted: false, deletesObject: false });
    expect(planClear(obj, "c.io/absent")).toBeUndefined();
    const ns: KubeObject = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "n", deletionTimestamp: iso(1) },
      spec: { finalizers: ["kubernetes"] },
    };
    expect(planClear(ns, "kubernetes")).toMatchObject({ place: "spec", deletesObject: true });
  });

  it("removes exactly that finalizer, and fails when the list changed meanwhile", () => {
    const plan = planClear(obj, "b.io/two")!;
    const ops = clearPatch(obj, plan);
    const patched = applyJsonPatch(structuredClone(obj), ops) as KubeObject;
    expect(patched.metadata.finalizers).toEqual(["a.io/one"]);
    const changed = structuredClone(obj);
    changed.metadata.finalizers = ["a.io/one", "b.io/two", "c.io/three"];
    expect(() => applyJsonPatch(changed, ops)).toThrow(/test/);
    const replaced = structuredClone(obj);
    replaced.metadata.uid = "u2";
    expect(() => applyJsonPatch(replaced, ops)).toThrow(/test/);
  });
});

describe("identity", () => {
  it("names the kubeconfig user of the current or given context", () => {
    const dir = mkdtempSync(join(tmpdir(), "identity-"));
    try {
      const file = join(dir, "config");
      writeFileSync(
        file,
        JSON.stringify({
          clusters: [{ name: "c", cluster: { server: "https://c.example:6443" } }],
          users: [
            { name: "admin", user: { token: "a" } },
            { name: "ops", user: { token: "o" } },
          ],
          contexts: [
            { name: "a", context: { cluster: "c", user: "admin" } },
            { name: "b", context: { cluster: "c", user: "ops" } },
          ],
          "current-context": "a",
        }),
      );
      const env = { USER: "alice" };
      expect(whoAmI(loadKubeconfig({ path: file, env }), env)).toEqual({
        kubeconfigUser: "admin",
        localUser: "alice",
      });
      expect(whoAmI(loadKubeconfig({ path: file, context: "b", env }), env).kubeconfigUser).toBe(
        "ops",
      );
      const fromList = loadKubeconfig({ env: { KUBECONFIG: `/nonexistent:${file}` } });
      expect(whoAmI(fromList, env).kubeconfigUser).toBe("admin");
      // In a pod there is no kubeconfig user.
      expect(whoAmI({}, env).kubeconfigUser).toBe("");
      expect(describeIdentity({ kubeconfigUser: "admin", localUser: "alice" })).toBe(
        "kubeconfig user admin, local user alice",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("observedGeneration lag", () => {
  const w = (
    name: string,
    generation: number,
    observed: number | undefined,
    specWriteAgoMs: number,
  ): { resource: ServedResource; obj: KubeObject } => ({
    resource: WIDGETS,
    obj: {
      ...{ apiVersion: "example.com/v1", kind: "Widget" },
      metadata: {
        name,
        namespace: "default",
        generation,
        creationTimestamp: iso(3_600_000),
        managedFields: [
          {
            manager: "kubectl",
            operation: "Update",
            time: iso(specWriteAgoMs),
            fieldsV1: { "f:spec": {} },
          },
          {
            manager: "kubectl",
            operation: "Update",
            time: iso(1_000),
            fieldsV1: { "f:metadata": {} },
            subresource: "",
          },
          {
            manager: "ctl",
            operation: "Update",
            time: iso(500),
            fieldsV1: { "f:status": {} },
            subresource: "status",
          },
        ],
      },
      ...(observed !== undefined ? { status: { observedGeneration: observed } } : {}),
    },
  });

  it("dates the lag from the last spec write, not from metadata or status writes", () => {
    expect(lastSpecWrite(w("a", 2, 1, 600_000).obj)).toBe(iso(600_000));
    const bare: KubeObject = { metadata: { name: "x", creationTimestamp: iso(5) } };
    expect(lastSpecWrite(bare)).toBe(iso(5));
  });

  it("reports objects behind for longer than the threshold, and never-observed ones of stamping kinds", () => {
    const lags = generationLags(
      [
        w("behind", 3, 2, 600_000),
        w("recent", 3, 2, 10_000),
        w("caught-up", 3, 3, 600_000),
        w("never", 1, undefined, 900_000),
      ],
      NOW,
      300_000,
    );
    expect(lags.map((l) => [l.name, l.observedGeneration, l.behindForMs])).toEqual([
      ["never", undefined, 900_000],
      ["behind", 2, 600_000],
    ]);
    // A kind where nothing stamps observedGeneration is not judged.
    expect(generationLags([w("never", 1, undefined, 900_000)], NOW, 0)).toEqual([]);
  });
});

describe("write sampling", () => {
  const base = (
    rv: number,
    generation: number,
    status: unknown,
    mf: KubeObject["metadata"]["managedFields"] = [],
  ): KubeObject => ({
    apiVersion: "example.com/v1",
    kind: "Widget",
    metadata: {
      name: "w",
      namespace: "default",
      resourceVersion: String(rv),
      generation,
      managedFields: mf,
    },
    status,
  });

  it("flags status rewritten without spec changes, names the writer, and spares spec-driven writes", () => {
    const s = new WriteSampler();
    s.baseline(WIDGETS, base(1, 1, { n: 0 }));
    for (let i = 1; i <= 12; i++) {
      s.observe(
        WIDGETS,
        "MODIFIED",
        base(1 + i, 1, { n: i }, [
          {
            manager: "hot-ctl",
            operation: "Update",
            subresource: "status",
            time: iso(0),
            fieldsV1: { "f:status": {} },
          },
        ]),
      );
    }
    // A repeated event (same resourceVersion) is not a write.
    s.observe(WIDGETS, "MODIFIED", base(13, 1, { n: 12 }));
    const hot = s.hotLoops(5_000, 1);
    expect(hot).toHaveLength(1);
    expect(hot[0]).toMatchObject({
      name: "w",
      writes: 12,
      statusWrites: 12,
      specWrites: 0,
      writers: ["hot-ctl (status)"],
    });

    const calm = new WriteSampler();
    calm.baseline(WIDGETS, base(1, 1, {}));
    let rv = 1;
    for (let g = 2; g <= 6; g++) {
      calm.observe(WIDGETS, "MODIFIED", base(++rv, g, { observedGeneration: g - 1 }));
      calm.observe(WIDGETS, "MODIFIED", base(++rv, g, { observedGeneration: g }));
    }
    expect(calm.hotLoops(5_000, 1)).toEqual([]);
    // Below the minimum count, or below the rate, nothing is hot.
    const few = new WriteSampler();
    few.baseline(WIDGETS, base(1, 1, {}));
    for (let i = 1; i < HOT_LOOP_MIN_WRITES; i++)
      few.observe(WIDGETS, "MODIFIED", base(1 + i, 1, { n: i }));
    expect(few.hotLoops(1_000, 1)).toEqual([]);
    expect(s.hotLoops(60_000, 1)).toEqual([]);
  });

  it("flags an object created and deleted over and over", () => {
    const s = new WriteSampler();
    let rv = 1;
    for (let i = 0; i < 4; i++) {
      s.observe(CONFIGMAPS, "ADDED", { ...base(++rv, 1, undefined), kind: "ConfigMap" });
      s.observe(CONFIGMAPS, "DELETED", { ...base(++rv, 1, undefined), kind: "ConfigMap" });
    }
    expect(s.hotLoops(2_000, 1)).toMatchObject([{ creates: 4, deletes: 4 }]);
  });

  it("reads per-key reconcile counts published on live Leases", () => {
    const stats = JSON.stringify({
      windowSeconds: 60,
      controllers: {
        webapp: {
          reconciles: 700,
          topKeys: [
            { key: "default/hot", reconciles: 600 },
            { key: "default/calm", reconciles: 30 },
          ],
        },
      },
    });
    const l = lease("webapp", { holder: "pod-a", renewedAgoMs: 1_000 });
    l.metadata.annotations = { [RECONCILE_STATS_ANNOTATION]: stats };
    const info = leaseInfo(l, NOW);
    const parsed = parseReconcileStats(stats);
    expect(reconcileHotKeys([{ info, stats: parsed }], 1)).toEqual([
      {
        lease: "webapp",
        leaseNamespace: "kube-system",
        controller: "webapp",
        key: "default/hot",
        reconciles: 600,
        windowSeconds: 60,
        perSecond: 10,
      },
    ]);
    // Counts from a dead leader are not trusted.
    expect(reconcileHotKeys([{ info: { ...info, state: "expired" }, stats: parsed }], 1)).toEqual(
      [],
    );
    expect(parseReconcileStats("{not json")).toBeUndefined();
    expect(parseReconcileStats('{"windowSeconds":0,"controllers":{}}')).toBeUndefined();
  });
});

describe("Warning Events", () => {
  it("groups recent warnings per component, reason and object, once per Event", () => {
    const leases = controllerLeases(
      [lease("webapp", { holder: "pod-a", renewedAgoMs: 1_000 })],
      NOW,
    );
    const ev = (name: string, agoMs: number, extra: Record<string, unknown> = {}): KubeObject => ({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace: "default", uid: name },
      type: "Warning",
      reason: "InvalidSpec",
      message: `bad ${name}`,
      count: 2,
      lastTimestamp: iso(agoMs),
      involvedObject: { kind: "Widget", namespace: "default", name: "w" },
      reportingComponent: "webapp",
      reportingInstance: "pod-a",
      ...extra,
    });
    const groups = recentWarnings(
      [
        ev("e1", 60_000),
        ev("e2", 5_000),
        ev("e2", 5_000), // the same Event read through events.k8s.io
        ev("old", 3_600_000),
        ev("normal", 1_000, { type: "Normal" }),
        // A TerminalError's Event (its action marks it), though older, comes first.
        ev("t1", 120_000, { action: TERMINAL_ERROR_ACTION, count: 1, message: "never" }),
      ],
      leases,
      NOW,
      900_000,
    );
    expect(groups).toEqual([
      {
        component: "webapp",
        reason: "InvalidSpec",
        object: "Widget default/w",
        count: 1,
        message: "never",
        lastSeen: iso(120_000),
        lastSeenAgoMs: 120_000,
        lease: "kube-system/webapp",
        terminal: true,
      },
      {
        component: "webapp",
        reason: "InvalidSpec",
        object: "Widget default/w",
        count: 4,
        message: "bad e2",
        lastSeen: iso(5_000),
        lastSeenAgoMs: 5_000,
        lease: "kube-system/webapp",
        terminal: false,
      },
    ]);
  });
});

describe("output", () => {
  it("aligns tables with multi-line cells", () => {
    expect(
      renderTable(
        ["kind", "finalizers"],
        [
          ["ConfigMap", "a\nb"],
          ["X", "c"],
        ],
      ),
    ).toBe("KIND        FINALIZERS\nConfigMap   a\n            b\nX           c\n");
    expect(parseOutputFormat("json")).toBe("json");
    expect(parseOutputFormat(undefined)).toBe("table");
    expect(() => parseOutputFormat("yaml")).toThrow(UsageError);
  });

  it("judges facts: healthy only when every check is OK", () => {
    const facts: DoctorFacts = {
      server: {
        url: "http://x",
        version: "v1.32.0",
        livez: { code: 200, body: "ok" },
        readyz: { code: 200, body: "ok" },
        latencyMs: 3,
      },
      leases: [],
      deleting: [],
      lags: [],
      hotLoops: [],
      hotKeys: [],
      sampledMs: 5_000,
      warnings: [],
      unreadable: [],
    };
    const t = { lagMs: 300_000, stuckMs: 600_000, hotLoopRate: 1, warningWindowMs: 900_000 };
    const ok = diagnose(facts, t, new Date(NOW));
    expect(ok.healthy).toBe(true);
    expect(renderReport(ok)).toMatch(/Healthy: no problem found\.\n$/);
    const notReady = diagnose(
      { ...facts, server: { ...facts.server, readyz: { code: 500, body: "not ready" } } },
      t,
      new Date(NOW),
    );
    expect(notReady.healthy).toBe(false);
    expect(notReady.checks[0]).toMatchObject({ name: "apiserver", verdict: "FAIL" });
    const leases = controllerLeases([lease("dead", { holder: "p", renewedAgoMs: 100_000 })], NOW);
    const dead = diagnose({ ...facts, leases }, t, new Date(NOW));
    expect(dead.checks.find((c) => c.name === "controllers")).toMatchObject({ verdict: "FAIL" });
    expect(renderReport(dead)).toContain("[FAIL] Controllers");
  });

  it("lists every apiserver by its identity Lease, and judges etcd members by quorum", () => {
    const identity = (name: string, url: string, storage: string, renewedAgoMs: number) => {
      const l = lease(name, { holder: `${name}_x`, renewedAgoMs, seconds: 3600 });
      l.metadata.labels = { "apiserver.kubernetes.io/identity": "kube-apiserver" };
      l.metadata.annotations = {
        "setpoint.dev/apiserver-url": url,
        "setpoint.dev/storage": storage,
      };
      return l;
    };
    const leases = [
      identity("apiserver-b", "https://127.0.0.1:2", "http://e1,http://e2", 60_000),
      identity("apiserver-a", "https://127.0.0.1:1", "http://e2,http://e3", 3_000),
      lease("setpoint-controller-manager", { holder: "cm-1", renewedAgoMs: 1_000 }),
    ];
    const apiservers = apiserverIdentities(leases, NOW);
    expect(apiservers.map((a) => [a.url, a.state])).toEqual([
      ["https://127.0.0.1:1", "renewing"],
      ["https://127.0.0.1:2", "stale"],
    ]);
    expect(etcdEndpointsOf(apiservers)).toEqual(["http://e1", "http://e2", "http://e3"]);
    // Identity Leases are not controllers' leader Leases.
    expect(controllerLeases(leases, NOW).map((l) => l.name)).toEqual([
      "setpoint-controller-manager",
    ]);

    const facts: DoctorFacts = {
      server: {
        url: "https://127.0.0.1:1",
        version: "v1.32.0",
        livez: { code: 200, body: "ok" },
        readyz: { code: 200, body: "ok" },
        latencyMs: 3,
      },
      apiservers,
      leases: [],
      deleting: [],
      lags: [],
      hotLoops: [],
      hotKeys: [],
      sampledMs: 0,
      warnings: [],
      unreadable: [],
    };
    const t = { lagMs: 300_000, stuckMs: 600_000, hotLoopRate: 1, warningWindowMs: 900_000 };
    const member = (endpoint: string, healthy: boolean, leader = false) => ({
      endpoint,
      healthy,
      leader,
      version: "3.4.23",
      raftTerm: 2,
      ...(healthy ? {} : { error: "ECONNREFUSED" }),
    });
    const check = (etcd: ReturnType<typeof member>[]) => {
      const r = diagnose({ ...facts, etcd }, t, new Date(NOW));
      return r.checks.find((c) => c.name === "etcd");
    };
    const byName = (name: string) =>
      diagnose(facts, t, new Date(NOW)).checks.find((c) => c.name === name);
    expect(byName("apiservers")).toMatchObject({ verdict: "WARN" });
    expect(byName("apiservers")?.lines[1]).toContain("not renewed for 1m");
    expect(byName("etcd")).toMatchObject({ verdict: "OK", summary: "no etcd in use" });
    expect(check([member("a", true, true), member("b", true), member("c", true)])).toMatchObject({
      verdict: "OK",
      summary: "3 of 3 members healthy; leader a",
    });
    expect(check([member("a", true, true), member("b", true), member("c", false)])?.verdict).toBe(
      "WARN",
    );
    expect(check([member("a", true), member("b", false), member("c", false)])).toMatchObject({
      verdict: "FAIL",
      summary: "1 of 3 members healthy: no quorum, writes fail; leader unknown",
    });
  });
});
