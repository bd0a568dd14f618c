/**
 * The disruption controller against a real apiserver (with the ReplicaSet and
 * Deployment controllers; Pods marked Ready as a node would): a budget's
 * status from minAvailable and maxUnavailable, as counts and percentages, the
 * controllers' scale (a Deployment through its ReplicaSet, a bare
 * ReplicaSet), currentHealthy from Ready Pods, disruptionsAllowed, the
 * DisruptionAllowed condition and its reasons, Pods without a controller
 * or with one that has no scale, Pods two budgets select,
 * disruptedPods entries that run out, and stale DisruptionTarget conditions.
 */
import type { KubeObject, Pod, PodDisruptionBudget } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { afterAll, describe, expect, it } from "vitest";
import {
  desired,
  disruptionsAllowed,
  goSelector,
  scaled,
} from "../../../src/controllers/disruption/index.ts";
import {
  BUILTIN_CONTROLLER_NAMES,
  DEPLOYMENT_CONTROLLER,
  DISRUPTION_CONTROLLER,
  REPLICASET_CONTROLLER,
} from "../../../src/controllers/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { EVENT, eventually, startControllers } from "../helpers.ts";
import { type PodsReady, startPodsReady } from "../workloads/pods-ready.ts";

const DISRUPTED_TIMEOUT_MS = 3_000;
const STALE_TIMEOUT_MS = 1_500;

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter(
      (n) => ![DISRUPTION_CONTROLLER, REPLICASET_CONTROLLER, DEPLOYMENT_CONTROLLER].includes(n),
    ),
    disruption: {
      disruptedPodTimeoutMs: DISRUPTED_TIMEOUT_MS,
      stalePodDisruptionTimeoutMs: STALE_TIMEOUT_MS,
    },
  }),
);

const PDB = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;

const readies: PodsReady[] = [];
afterAll(async () => {
  for (const r of readies) await r.stop();
});

function ready(client: Client, ns: string, hold?: (p: Pod) => boolean): PodsReady {
  const r = startPodsReady(client, ns, hold ? { hold } : {});
  readies.push(r);
  return r;
}

function budget(ns: string, name: string, spec: object): PodDisruptionBudget {
  return { ...PDB, metadata: { name, namespace: ns }, spec } as PodDisruptionBudget;
}

function template(app: string) {
  return {
    metadata: { labels: { app } },
    spec: { containers: [{ name: "c", image: "nginx:1.27" }] },
  };
}

/** A Pod without a controller, bound to a node (so a delete waits for the node). */
function bare(ns: string, name: string, labels: Record<string, string>): Pod {
  return {
    ...POD,
    metadata: { name, namespace: ns, labels },
    spec: { nodeName: "node-0", containers: [{ name: "c", image: "nginx:1.27" }] },
  };
}

/** The budget's status once it has the counts `want` asks for. */
async function statusOf(
  ns: string,
  name: string,
  want: Partial<NonNullable<PodDisruptionBudget["status"]>>,
): Promise<NonNullable<PodDisruptionBudget["status"]>> {
  let last: unknown;
  try {
    return await eventually(
      async () => {
        const s = (await env.client.get<PodDisruptionBudget>(PDB, name, ns)).status;
        last = s;
        if (!s) return undefined;
        for (const [k, v] of Object.entries(want)) {
          if (JSON.stringify((s as unknown as Record<string, unknown>)[k]) !== JSON.stringify(v))
            return undefined;
        }
        return s;
      },
      `PodDisruptionBudget ${name} with ${JSON.stringify(want)}`,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; last status ${JSON.stringify(last)}`);
  }
}

function condition(s: NonNullable<PodDisruptionBudget["status"]>) {
  return s.conditions?.find((c) => c.type === "DisruptionAllowed");
}

async function eventWith(ns: string, reason: string): Promise<KubeObject> {
  return eventually(async () => {
    const evs = await env.client.list<KubeObject>(EVENT, { namespace: ns });
    return evs.items.find((e) => e.reason === reason);
  }, `${reason} Event`);
}

describe("disruption controller", () => {
  it("counts Ready Pods against an integer minAvailable, allowing what is above it", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create(
      budget(ns, "web", { minAvailable: 2, selector: { matchLabels: { app: "web" } } }),
    );
    // No Pods yet: nothing is expected, so nothing may be disrupted.
    let s = await statusOf(ns, "web", { expectedPods: 0, desiredHealthy: 2 });
    expect(s).toMatchObject({ currentHealthy: 0, disruptionsAllowed: 0, observedGeneration: 1 });
    expect(condition(s)).toMatchObject({ status: "False", reason: "InsufficientPods" });
    const noPods = await eventWith(ns, "NoPods");
    expect(noPods).toMatchObject({
      type: "Normal",
      message: "No matching pods found",
      involvedObject: { kind: "PodDisruptionBudget", name: "web", namespace: ns },
      source: { component: "controllermanager" },
    });

    // Three Pods, one held not ready; another Pod the selector does not take.
    const r = ready(env.client, ns, (p) => p.metadata.name === "web-2");
    for (let i = 0; i < 3; i++) await env.client.create(bare(ns, `web-${i}`, { app: "web" }));
    await env.client.create(bare(ns, "other", { app: "other" }));
    s = await statusOf(ns, "web", { expectedPods: 3, currentHealthy: 2, disruptionsAllowed: 0 });
    expect(condition(s)?.reason).toBe("InsufficientPods");

    r.setHold(undefined);
    await env.client.patch(
      POD,
      "web-2",
      ns,
      { metadata: { labels: { touched: "1" } } },
      { type: "merge" },
    );
    s = await statusOf(ns, "web", { currentHealthy: 3, disruptionsAllowed: 1 });
    expect(s.desiredHealthy).toBe(2);
    expect(condition(s)).toMatchObject({ status: "True", reason: "SufficientPods", message: "" });
    expect(condition(s)?.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    // A Pod being deleted (its node has yet to stop it) is not healthy.
    await env.client.delete(POD, "web-0", ns);
    s = await statusOf(ns, "web", { expectedPods: 3, currentHealthy: 2, disruptionsAllowed: 0 });

    // A new generation of the spec is observed.
    const pdb = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    await env.client.update<PodDisruptionBudget>({
      ...pdb,
      spec: { ...pdb.spec, minAvailable: 1 },
    });
    s = await statusOf(ns, "web", {
      observedGeneration: 2,
      desiredHealthy: 1,
      disruptionsAllowed: 1,
    });
  });

  it("expects a Deployment's replicas under maxUnavailable, through its ReplicaSet, and follows its scale", async () => {
    const ns = await freshNamespace(env.client);
    ready(env.client, ns);
    await env.client.create(
      budget(ns, "api", { maxUnavailable: "25%", selector: { matchLabels: { app: "api" } } }),
    );
    await env.client.create({
      ...DEPLOY,
      metadata: { name: "api", namespace: ns },
      spec: { replicas: 4, selector: { matchLabels: { app: "api" } }, template: template("api") },
    });
    let s = await statusOf(ns, "api", { expectedPods: 4, currentHealthy: 4 });
    // 25% of 4 rounds up to 1 unavailable.
    expect(s).toMatchObject({ desiredHealthy: 3, disruptionsAllowed: 1 });
    expect(condition(s)?.reason).toBe("SufficientPods");

    await env.client.patch(DEPLOY, "api", ns, { spec: { replicas: 6 } }, { type: "merge" });
    // 25% of 6 rounds up to 2.
    s = await statusOf(ns, "api", { expectedPods: 6, currentHealthy: 6 });
    expect(s).toMatchObject({ desiredHealthy: 4, disruptionsAllowed: 2 });
  });

  it("expects a bare ReplicaSet's replicas under a percentage minAvailable", async () => {
    const ns = await freshNamespace(env.client);
    ready(env.client, ns);
    await env.client.create(
      budget(ns, "db", { minAvailable: "50%", selector: { matchLabels: { app: "db" } } }),
    );
    await env.client.create({
      ...RS,
      metadata: { name: "db", namespace: ns },
      spec: { replicas: 3, selector: { matchLabels: { app: "db" } }, template: template("db") },
    });
    const s = await statusOf(ns, "db", { expectedPods: 3, currentHealthy: 3 });
    // 50% of 3 rounds up to 2.
    expect(s).toMatchObject({ desiredHealthy: 2, disruptionsAllowed: 1 });
  });

  it("leaves Pods without a controller out of a scale and says so; fails safe when a controller is gone", async () => {
    const ns = await freshNamespace(env.client);
    ready(env.client, ns);
    await env.client.create(
      budget(ns, "mix", { maxUnavailable: 1, selector: { matchLabels: { app: "mix" } } }),
    );
    await env.client.create({
      ...RS,
      metadata: { name: "mix", namespace: ns },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "mix", tier: "rs" } },
        template: { ...template("mix"), metadata: { labels: { app: "mix", tier: "rs" } } },
      },
    });
    // Not the ReplicaSet's to adopt: its selector wants tier=rs too.
    await env.client.create(bare(ns, "loner", { app: "mix" }));
    // The ReplicaSet's 2 are expected; the loner is healthy but not expected.
    let s = await statusOf(ns, "mix", { expectedPods: 2, currentHealthy: 3 });
    expect(s).toMatchObject({ desiredHealthy: 1, disruptionsAllowed: 2 });
    const unmanaged = await eventWith(ns, "UnmanagedPods");
    expect(unmanaged).toMatchObject({
      type: "Warning",
      message:
        'Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: mix,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.',
    });

    // A Pod whose controller does not exist: nothing can be allowed.
    await env.client.create({
      ...bare(ns, "stray", { app: "mix" }),
      metadata: {
        name: "stray",
        namespace: ns,
        labels: { app: "mix" },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "ghost",
            uid: "00000000-0000-0000-0000-000000000001",
            controller: true,
          },
        ],
      },
    });
    s = await eventually(async () => {
      const st = (await env.client.get<PodDisruptionBudget>(PDB, "mix", ns)).status;
      return condition(st ?? ({} as never))?.reason === "SyncFailed" ? st : undefined;
    }, "SyncFailed");
    expect(s.disruptionsAllowed).toBe(0);
    expect(condition(s)).toMatchObject({
      status: "False",
      message: 'found no controllers for pod "stray"',
      observedGeneration: 1,
    });
    const failed = await eventWith(ns, "CalculateExpectedPodCountFailed");
    expect(failed.message).toBe(
      'Failed to calculate the number of expected pods: found no controllers for pod "stray"',
    );

    // The stray goes: the budget recovers.
    await env.client.delete(POD, "stray", ns, { gracePeriodSeconds: 0 });
    s = await statusOf(ns, "mix", { disruptionsAllowed: 2 });
    expect(condition(s)).toMatchObject({ status: "True", reason: "SufficientPods", message: "" });
  });

  it("says why a controller without a scale cannot be counted, and names a Pod two budgets select", async () => {
    const ns = await freshNamespace(env.client);
    const job = await env.client.create<KubeObject>({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "batch", namespace: ns },
      spec: {
        template: {
          metadata: { labels: { app: "batch" } },
          spec: { restartPolicy: "Never", containers: [{ name: "c", image: "busybox:1.36" }] },
        },
      },
    });
    await env.client.create(
      budget(ns, "batch", { maxUnavailable: 1, selector: { matchLabels: { app: "batch" } } }),
    );
    await env.client.create<Pod>({
      ...bare(ns, "batch-0", { app: "batch" }),
      metadata: {
        name: "batch-0",
        namespace: ns,
        labels: { app: "batch" },
        ownerReferences: [
          {
            apiVersion: "batch/v1",
            kind: "Job",
            name: "batch",
            uid: job.metadata.uid ?? "",
            controller: true,
          },
        ],
      },
    });
    const s = await eventually(async () => {
      const st = (await env.client.get<PodDisruptionBudget>(PDB, "batch", ns)).status;
      return st && condition(st)?.reason === "SyncFailed" ? st : undefined;
    }, "SyncFailed");
    expect(condition(s)?.message).toBe("jobs.batch does not implement the scale subresource");

    await env.client.create(
      budget(ns, "also", { minAvailable: 0, selector: { matchLabels: { app: "batch" } } }),
    );
    await env.client.patch(
      POD,
      "batch-0",
      ns,
      { metadata: { labels: { v: "2" } } },
      { type: "merge" },
    );
    const ev = await eventWith(ns, "MultiplePodDisruptionBudgets");
    expect(ev).toMatchObject({
      type: "Warning",
      involvedObject: { kind: "Pod", name: "batch-0" },
    });
    expect(ev.message).toMatch(
      new RegExp(
        `^Pod "${ns}"/"batch-0" matches multiple PodDisruptionBudgets\\.  Chose "(batch|also)" arbitrarily\\.$`,
      ),
    );
  });

  it("holds an evicted Pod out of the healthy count until its disruptedPods entry runs out", async () => {
    const ns = await freshNamespace(env.client);
    ready(env.client, ns);
    await env.client.create(
      budget(ns, "q", { minAvailable: 1, selector: { matchLabels: { app: "q" } } }),
    );
    for (const n of ["q-0", "q-1"]) await env.client.create(bare(ns, n, { app: "q" }));
    const before = await statusOf(ns, "q", { currentHealthy: 2, disruptionsAllowed: 1 });
    expect(before.disruptedPods).toBeUndefined();

    // What an eviction writes: the Pod named, at the time it was approved.
    const pdb = await env.client.get<PodDisruptionBudget>(PDB, "q", ns);
    const at = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    const t0 = Date.now();
    await env.client.updateStatus<PodDisruptionBudget>({
      ...pdb,
      status: { ...pdb.status!, disruptionsAllowed: 0, disruptedPods: { "q-0": at } },
    });
    const held = await statusOf(ns, "q", { currentHealthy: 1, disruptionsAllowed: 0 });
    expect(held.disruptedPods).toEqual({ "q-0": at });
    expect(condition(held)?.reason).toBe("InsufficientPods");

    // Not deleted in time: the entry goes, the Pod counts again, with a NotDeleted Event.
    const after = await statusOf(ns, "q", { currentHealthy: 2, disruptionsAllowed: 1 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(DISRUPTED_TIMEOUT_MS - 1_000);
    expect(after.disruptedPods).toBeUndefined();
    const ev = await eventWith(ns, "NotDeleted");
    expect(ev).toMatchObject({
      type: "Warning",
      message: `Pod was expected by PDB ${ns}/${ns} to be deleted but it wasn't`,
      involvedObject: { kind: "Pod", name: "q-0" },
    });
  });

  it("sets a stale eviction's DisruptionTarget condition False on a Pod still running", async () => {
    const ns = await freshNamespace(env.client);
    const p = await env.client.create<Pod>(bare(ns, "s", { app: "s" }));
    const t = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await env.client.updateStatus<Pod>({
      ...p,
      status: {
        ...p.status,
        phase: "Running",
        conditions: [
          {
            type: "DisruptionTarget",
            status: "True",
            reason: "EvictionByEvictionAPI",
            message: "Eviction API: evicting",
            lastTransitionTime: t,
          },
        ],
      },
    });
    const c = await eventually(async () => {
      const got = await env.client.get<Pod>(POD, "s", ns);
      const x = got.status?.conditions?.find((y) => y.type === "DisruptionTarget");
      return x?.status === "False" ? x : undefined;
    }, "DisruptionTarget False");
    expect(c.reason).toBeUndefined();
    expect(c.message).toBeUndefined();
    expect(Date.parse(c.lastTransitionTime ?? "")).toBeGreaterThanOrEqual(Date.parse(t) + 1_000);
  });
});

describe("disruption budget arithmetic", () => {
  const pdb = (spec: object) => budget("ns", "b", spec);
  it("rounds percentages up and never desires fewer than none", () => {
    expect(scaled("25%", 6)).toBe(2);
    expect(scaled("50%", 3)).toBe(2);
    expect(scaled(3, 100)).toBe(3);
    expect(() => scaled("half", 4)).toThrow("invalid value for IntOrString");
    expect(desired(pdb({ maxUnavailable: 5 }), 3, 3)).toEqual({ expected: 3, desiredHealthy: 0 });
    expect(desired(pdb({ minAvailable: "100%" }), 2, 4)).toEqual({
      expected: 4,
      desiredHealthy: 4,
    });
    expect(desired(pdb({ minAvailable: 2 }), 5, 0)).toEqual({ expected: 5, desiredHealthy: 2 });
  });
  it("allows nothing when no Pods are expected or too few are healthy", () => {
    expect(disruptionsAllowed(3, 0, 0)).toBe(0);
    expect(disruptionsAllowed(1, 2, 3)).toBe(0);
    expect(disruptionsAllowed(4, 2, 4)).toBe(2);
  });
  it("prints selectors as Go's %v does", () => {
    expect(
      goSelector({
        matchLabels: { b: "2", a: "1" },
        matchExpressions: [{ key: "k", operator: "In", values: ["x", "y"] }],
      }),
    ).toBe(
      "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}",
    );
  });
});
