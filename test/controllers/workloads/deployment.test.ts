/**
 * The Deployment controller against a real apiserver over HTTP (with the
 * ReplicaSet controller and the garbage collector): ReplicaSets named by
 * pod-template-hash, revisions and history, rolling updates that keep
 * maxSurge and maxUnavailable at every observed moment, Recreate, pause and
 * resume, proportional scaling, the progress deadline, conditions and Events.
 */
import type { Deployment, Pod, ReplicaSet } from "@setpoint/api";
import { Informer } from "@setpoint/runtime";
import { describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { EVENT, eventually, startControllers } from "../helpers.ts";
import { startPodsReady } from "./pods-ready.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    // Pods stay unbound: pods-ready.ts stands in for nodes.
    disabled: ["namespace", "event-ttl", "serviceaccount", "scheduler"],
  }),
);

const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

function deployment(ns: string, name: string, replicas: number, spec: object = {}): Deployment {
  return {
    ...DEPLOY,
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "nginx:1.27" }] },
      },
      ...spec,
    },
  };
}

async function get(ns: string, name: string): Promise<Deployment> {
  return env.client.get<Deployment>(DEPLOY, name, ns);
}

async function sets(ns: string): Promise<ReplicaSet[]> {
  return (await env.client.list<ReplicaSet>(RS, { namespace: ns })).items;
}

/** Waits until the Deployment's rollout is complete (what `kubectl rollout status` waits for). */
async function rolledOut(ns: string, name: string): Promise<Deployment> {
  return eventually(async () => {
    const d = await get(ns, name);
    const s = d.status;
    const n = d.spec?.replicas ?? 1;
    return (s?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
      (s?.updatedReplicas ?? 0) === n &&
      (s?.replicas ?? 0) === n &&
      (s?.availableReplicas ?? 0) === n
      ? d
      : undefined;
  }, `${name} rolled out`);
}

async function setImage(ns: string, name: string, image: string): Promise<void> {
  const d = await get(ns, name);
  const body = structuredClone(d);
  const c = body.spec?.template.spec?.containers[0];
  if (c) c.image = image;
  await env.client.update(body);
}

async function events(ns: string, reason: string): Promise<string[]> {
  const list = await env.client.list(EVENT, { namespace: ns });
  return list.items
    .filter((e) => (e as { reason?: string }).reason === reason)
    .map((e) => (e as { message?: string }).message ?? "");
}

describe("deployment controller", () => {
  it("creates a ReplicaSet <name>-<hash> at revision 1 and reports the rollout complete", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      const created = await env.client.create(deployment(ns, "web", 3));
      const d = await rolledOut(ns, "web");
      const [rs, ...more] = await sets(ns);
      expect(more).toHaveLength(0);
      const hash = rs?.metadata.labels?.["pod-template-hash"] ?? "";
      expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
      expect(rs?.metadata.name).toBe(`web-${hash}`);
      expect(rs?.spec?.selector.matchLabels).toEqual({ app: "web", "pod-template-hash": hash });
      expect(rs?.metadata.ownerReferences?.[0]).toMatchObject({
        kind: "Deployment",
        name: "web",
        uid: created.metadata.uid,
        controller: true,
      });
      expect(rs?.metadata.annotations).toMatchObject({
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
      });
      expect(d.metadata.annotations?.["deployment.kubernetes.io/revision"]).toBe("1");
      expect(d.status).toMatchObject({
        replicas: 3,
        updatedReplicas: 3,
        readyReplicas: 3,
        availableReplicas: 3,
      });
      const conds = Object.fromEntries((d.status?.conditions ?? []).map((c) => [c.type, c]));
      expect(conds.Available).toMatchObject({
        status: "True",
        reason: "MinimumReplicasAvailable",
        message: "Deployment has minimum availability.",
      });
      const progressing = await eventually(async () => {
        const c = (await get(ns, "web")).status?.conditions?.find((x) => x.type === "Progressing");
        return c?.reason === "NewReplicaSetAvailable" ? c : undefined;
      }, "NewReplicaSetAvailable");
      expect(progressing).toMatchObject({
        status: "True",
        message: `ReplicaSet "web-${hash}" has successfully progressed.`,
      });
      expect(await events(ns, "ScalingReplicaSet")).toContain(
        `Scaled up replica set web-${hash} from 0 to 3`,
      );
    } finally {
      await ready.stop();
    }
  });

  it.each([
    { replicas: 4, maxSurge: 1, maxUnavailable: 0 },
    { replicas: 4, maxSurge: 0, maxUnavailable: 1 },
    { replicas: 5, maxSurge: "40%", maxUnavailable: "40%" },
  ])("rolls out within maxSurge and maxUnavailable at every step: %o", async (c) => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    const stop = new AbortController();
    try {
      await env.client.create(
        deployment(ns, "web", c.replicas, {
          strategy: {
            type: "RollingUpdate",
            rollingUpdate: { maxSurge: c.maxSurge, maxUnavailable: c.maxUnavailable },
          },
        }),
      );
      await rolledOut(ns, "web");
      const pct = (v: number | string, up: boolean) =>
        typeof v === "number"
          ? v
          : (up ? Math.ceil : Math.floor)((Number.parseInt(v, 10) * c.replicas) / 100);
      const surge = pct(c.maxSurge, true);
      const unavailable = pct(c.maxUnavailable, false);
      // Watch every Pod event during the rollout and check the bounds after each.
      const violations: string[] = [];
      let events = 0;
      const pods = new Informer<Pod>(env.client, POD, { namespace: ns });
      const check = () => {
        events++;
        const live = pods.list().filter((p) => !p.metadata.deletionTimestamp);
        const readyNow = live.filter((p) =>
          p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
        ).length;
        if (live.length > c.replicas + surge) violations.push(`${live.length} pods`);
        if (readyNow < c.replicas - unavailable) violations.push(`${readyNow} ready`);
      };
      pods.addEventHandler({
        onAdd: (_, initial) => !initial && check(),
        onUpdate: check,
        onDelete: check,
      });
      pods.start(stop.signal);
      await pods.waitForSync();
      await setImage(ns, "web", "nginx:1.28");
      const d = await rolledOut(ns, "web");
      expect(violations).toEqual([]);
      expect(events).toBeGreaterThan(c.replicas * 2);
      const all = await sets(ns);
      expect(all).toHaveLength(2);
      const byRev = Object.fromEntries(
        all.map((rs) => [rs.metadata.annotations?.["deployment.kubernetes.io/revision"], rs]),
      );
      expect(byRev["2"]?.spec?.replicas).toBe(c.replicas);
      expect(byRev["1"]?.spec?.replicas).toBe(0);
      expect(d.metadata.annotations?.["deployment.kubernetes.io/revision"]).toBe("2");
    } finally {
      stop.abort();
      await ready.stop();
    }
  });

  it("Recreate scales the old ReplicaSet to 0 and waits for its Pods before the new one starts", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    const stop = new AbortController();
    try {
      await env.client.create(deployment(ns, "web", 3, { strategy: { type: "Recreate" } }));
      await rolledOut(ns, "web");
      let mixed = 0;
      const pods = new Informer<Pod>(env.client, POD, { namespace: ns });
      const check = () => {
        const images = new Set(pods.list().map((p) => p.spec?.containers[0]?.image));
        if (images.size > 1) mixed++;
      };
      pods.addEventHandler({ onAdd: check, onUpdate: check, onDelete: check });
      pods.start(stop.signal);
      await pods.waitForSync();
      await setImage(ns, "web", "nginx:1.28");
      await rolledOut(ns, "web");
      expect(mixed).toBe(0);
      const msgs = await events(ns, "ScalingReplicaSet");
      expect(msgs.some((m) => / from 3 to 0$/.test(m))).toBe(true);
    } finally {
      stop.abort();
      await ready.stop();
    }
  });

  it("pauses and resumes with Kubernetes' conditions, and rolls back to an old template", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      await env.client.create(deployment(ns, "web", 2));
      await rolledOut(ns, "web");
      await env.client.patch(DEPLOY, "web", ns, { spec: { paused: true } }, { type: "merge" });
      const paused = await eventually(async () => {
        const c = (await get(ns, "web")).status?.conditions?.find((x) => x.type === "Progressing");
        return c?.reason === "DeploymentPaused" ? c : undefined;
      }, "DeploymentPaused");
      expect(paused).toMatchObject({ status: "Unknown", message: "Deployment is paused" });
      await setImage(ns, "web", "nginx:1.28");
      // Paused: no new ReplicaSet.
      await eventually(
        async () => (await get(ns, "web")).status?.observedGeneration === 3,
        "observed",
      );
      expect(await sets(ns)).toHaveLength(1);
      await env.client.patch(DEPLOY, "web", ns, { spec: { paused: false } }, { type: "merge" });
      await eventually(async () => {
        const c = (await get(ns, "web")).status?.conditions?.find((x) => x.type === "Progressing");
        return (
          c?.reason === "DeploymentResumed" ||
          c?.reason === "ReplicaSetUpdated" ||
          c?.reason === "NewReplicaSetAvailable"
        );
      }, "resumed");
      await rolledOut(ns, "web");
      expect(await sets(ns)).toHaveLength(2);
      // Roll back as kubectl does: the old ReplicaSet's template, which becomes revision 3.
      await setImage(ns, "web", "nginx:1.27");
      await rolledOut(ns, "web");
      const all = await sets(ns);
      expect(all).toHaveLength(2);
      const back = all.find((rs) => rs.spec?.template?.spec?.containers[0]?.image === "nginx:1.27");
      await eventually(async () => {
        const rs = await env.client.get<ReplicaSet>(RS, back?.metadata.name ?? "", ns);
        return rs.metadata.annotations?.["deployment.kubernetes.io/revision"] === "3"
          ? rs
          : undefined;
      }, "revision 3");
      const rs = await env.client.get<ReplicaSet>(RS, back?.metadata.name ?? "", ns);
      expect(rs.metadata.annotations?.["deployment.kubernetes.io/revision-history"]).toBe("1");
    } finally {
      await ready.stop();
    }
  });

  it("scales proportionally during a stalled rollout", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      await env.client.create(
        deployment(ns, "web", 10, {
          strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 3, maxUnavailable: 2 } },
        }),
      );
      await rolledOut(ns, "web");
      // The new Pods never become ready: the rollout stalls with old and new ReplicaSets active.
      ready.setHold((p) => p.spec?.containers[0]?.image === "nginx:broken");
      await setImage(ns, "web", "nginx:broken");
      const size = (all: ReplicaSet[], image: string) =>
        all.find((rs) => rs.spec?.template?.spec?.containers[0]?.image === image)?.spec?.replicas ??
        0;
      // 10 + 3 surge: the new one gets 3, then the old one drops to 8 (2 unavailable), the new one to 5.
      await eventually(async () => {
        const all = await sets(ns);
        return size(all, "nginx:1.27") === 8 && size(all, "nginx:broken") === 5;
      }, "stalled at 8 old and 5 new");
      await env.client.patch(DEPLOY, "web", ns, { spec: { replicas: 20 } }, { type: "merge" });
      // 23 allowed (20 + 3 surge): the 10 added go 8:5 → 6 and 4 (leftover to the larger).
      const scaled = await eventually(async () => {
        const all = await sets(ns);
        const total = all.reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
        return total === 23 ? all : undefined;
      }, "scaled to 23");
      expect(size(scaled, "nginx:1.27")).toBe(14);
      expect(size(scaled, "nginx:broken")).toBe(9);
    } finally {
      await ready.stop();
    }
  });

  it("reports ProgressDeadlineExceeded when a rollout makes no progress in time", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns, { hold: () => true });
    try {
      await env.client.create(deployment(ns, "stuck", 1, { progressDeadlineSeconds: 2 }));
      const c = await eventually(async () => {
        const x = (await get(ns, "stuck")).status?.conditions?.find(
          (y) => y.type === "Progressing",
        );
        return x?.reason === "ProgressDeadlineExceeded" ? x : undefined;
      }, "ProgressDeadlineExceeded");
      const rs = (await sets(ns))[0];
      expect(c).toMatchObject({
        status: "False",
        message: `ReplicaSet "${rs?.metadata.name}" has timed out progressing.`,
      });
      const a = (await get(ns, "stuck")).status?.conditions?.find((y) => y.type === "Available");
      expect(a).toMatchObject({ status: "False", reason: "MinimumReplicasUnavailable" });
    } finally {
      await ready.stop();
    }
  });

  it("keeps revisionHistoryLimit old ReplicaSets", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      await env.client.create(deployment(ns, "web", 1, { revisionHistoryLimit: 1 }));
      for (const v of ["1.1", "1.2", "1.3"]) {
        await rolledOut(ns, "web");
        await setImage(ns, "web", `nginx:${v}`);
      }
      await rolledOut(ns, "web");
      const all = await eventually(async () => {
        const x = await sets(ns);
        return x.length === 2 ? x : undefined;
      }, "2 ReplicaSets left");
      const revs = all
        .map((rs) => rs.metadata.annotations?.["deployment.kubernetes.io/revision"])
        .sort();
      expect(revs).toEqual(["3", "4"]);
    } finally {
      await ready.stop();
    }
  });
});
