/**
 * The ReplicaSet controller against a real apiserver over HTTP: Pods created
 * to match replicas and named like Kubernetes names them, scaled down least
 * useful first, orphans adopted and non-matching Pods released, status with
 * ready, available (minReadySeconds) and fully labelled counts, Events; and
 * the slow-start batches, expectations and deletion order on their own.
 */
import type { Pod, ReplicaSet } from "@setpoint/api";
import { Informer } from "@setpoint/runtime";
import { describe, expect, it } from "vitest";
import {
  EXPECTATIONS_TTL_MS,
  Expectations,
  slowStartBatch,
  sortPodsForDeletion,
} from "../../../src/controllers/replicaset/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { sleep } from "../../helpers/poll.ts";
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

const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

function replicaSet(ns: string, name: string, replicas: number, extra: object = {}): ReplicaSet {
  return {
    ...RS,
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name, tier: "web" } },
        spec: { containers: [{ name: "c", image: "nginx:1.27" }] },
      },
      ...extra,
    },
  };
}

async function podsOf(ns: string, app: string): Promise<Pod[]> {
  const list = await env.client.list<Pod>(POD, { namespace: ns, labelSelector: `app=${app}` });
  return list.items.filter((p) => !p.metadata.deletionTimestamp);
}

describe("replicaset controller", () => {
  it("creates Pods named <rs>-<5 chars>, controlled by the ReplicaSet, and reports them ready", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      const rs = await env.client.create(replicaSet(ns, "web", 3));
      const done = await eventually(async () => {
        const o = await env.client.get<ReplicaSet>(RS, "web", ns);
        return o.status?.availableReplicas === 3 ? o : undefined;
      }, "3 available");
      expect(done.status).toMatchObject({
        replicas: 3,
        fullyLabeledReplicas: 3,
        readyReplicas: 3,
        availableReplicas: 3,
        observedGeneration: 1,
      });
      const pods = await podsOf(ns, "web");
      expect(pods).toHaveLength(3);
      for (const p of pods) {
        expect(p.metadata.name).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
        expect(p.metadata.ownerReferences).toEqual([
          {
            apiVersion: "apps/v1",
            kind: "ReplicaSet",
            name: "web",
            uid: rs.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ]);
        expect(p.spec?.containers[0]?.image).toBe("nginx:1.27");
      }
      const events = await eventually(async () => {
        const list = await env.client.list(EVENT, { namespace: ns });
        const created = list.items.filter(
          (e) => (e as { reason?: string }).reason === "SuccessfulCreate",
        );
        return created.length === 3 ? created : undefined;
      }, "3 SuccessfulCreate events");
      expect((events[0] as { message?: string }).message).toMatch(/^Created pod: web-/);
      expect((events[0] as { source?: { component?: string } }).source?.component).toBe(
        "replicaset-controller",
      );
    } finally {
      await ready.stop();
    }
  });

  it("creates each missing Pod once, however far behind its cache is (expectations)", async () => {
    const ns = await freshNamespace(env.client);
    const seen = new Set<string>();
    const stop = new AbortController();
    const pods = new Informer<Pod>(env.client, POD, { namespace: ns });
    pods.addEventHandler({ onAdd: (p) => seen.add(p.metadata.name ?? "") });
    pods.start(stop.signal);
    try {
      await env.client.create(replicaSet(ns, "many", 60));
      await eventually(async () => {
        const o = await env.client.get<ReplicaSet>(RS, "many", ns);
        return o.status?.replicas === 60;
      }, "60 replicas");
      // Status updates and Pod events keep waking the ReplicaSet; none creates more.
      await env.client.patch(
        RS,
        "many",
        ns,
        { metadata: { labels: { touched: "1" } } },
        {
          type: "merge",
        },
      );
      await sleep(500);
      expect(seen.size).toBe(60);
      expect(await podsOf(ns, "many")).toHaveLength(60);
    } finally {
      stop.abort();
    }
  });

  it("scales down, deleting not-ready Pods before ready ones", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      await env.client.create(replicaSet(ns, "web", 3));
      await eventually(async () => {
        const o = await env.client.get<ReplicaSet>(RS, "web", ns);
        return o.status?.readyReplicas === 3;
      }, "3 ready");
      // Two more that never become ready: they go first when scaling back to 3.
      ready.setHold(() => true);
      await env.client.patch(RS, "web", ns, { spec: { replicas: 5 } }, { type: "merge" });
      await eventually(async () => (await podsOf(ns, "web")).length === 5, "5 pods");
      const unready = (await podsOf(ns, "web"))
        .filter((p) => !p.status?.conditions?.some((c) => c.type === "Ready"))
        .map((p) => p.metadata.name);
      expect(unready).toHaveLength(2);
      await env.client.patch(RS, "web", ns, { spec: { replicas: 3 } }, { type: "merge" });
      const left = await eventually(async () => {
        const pods = await podsOf(ns, "web");
        return pods.length === 3 ? pods : undefined;
      }, "3 pods");
      for (const p of left) expect(unready).not.toContain(p.metadata.name);
      const o = await eventually(async () => {
        const x = await env.client.get<ReplicaSet>(RS, "web", ns);
        return x.status?.replicas === 3 && x.status.observedGeneration === 3 ? x : undefined;
      }, "status after scale down");
      expect(o.status?.readyReplicas).toBe(3);
      const deleted = await env.client.list(EVENT, { namespace: ns });
      expect(
        deleted.items.filter((e) => (e as { reason?: string }).reason === "SuccessfulDelete"),
      ).toHaveLength(2);
    } finally {
      await ready.stop();
    }
  });

  it("adopts a matching orphan and releases a Pod whose labels stop matching", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create<Pod>({
      ...POD,
      metadata: { name: "orphan", namespace: ns, labels: { app: "web" } },
      spec: { containers: [{ name: "c", image: "nginx:1.27" }] },
    });
    const rs = await env.client.create(replicaSet(ns, "web", 2));
    const adopted = await eventually(async () => {
      const p = await env.client.get<Pod>(POD, "orphan", ns);
      return p.metadata.ownerReferences?.[0]?.uid === rs.metadata.uid ? p : undefined;
    }, "orphan adopted");
    expect(adopted.metadata.ownerReferences?.[0]?.controller).toBe(true);
    const two = await eventually(async () => {
      const pods = await podsOf(ns, "web");
      return pods.length === 2 ? pods : undefined;
    }, "2 pods");
    expect(two.map((p) => p.metadata.name)).toContain("orphan");
    // The orphan lacks the template's tier label: 1 of 2 is fully labelled.
    const st = await eventually(async () => {
      const o = await env.client.get<ReplicaSet>(RS, "web", ns);
      return o.status?.replicas === 2 ? o.status : undefined;
    }, "status");
    expect(st.fullyLabeledReplicas).toBe(1);

    await env.client.patch(
      POD,
      "orphan",
      ns,
      { metadata: { labels: { app: "other" } } },
      {
        type: "merge",
      },
    );
    const released = await eventually(async () => {
      const p = await env.client.get<Pod>(POD, "orphan", ns);
      return p.metadata.ownerReferences === undefined ? p : undefined;
    }, "pod released");
    expect(released.metadata.labels).toEqual({ app: "other" });
    const replaced = await eventually(async () => {
      const pods = await podsOf(ns, "web");
      return pods.length === 2 ? pods : undefined;
    }, "replacement created");
    expect(replaced.map((p) => p.metadata.name)).not.toContain("orphan");
  });

  it("counts a ready Pod available only after minReadySeconds", async () => {
    const ns = await freshNamespace(env.client);
    const ready = startPodsReady(env.client, ns);
    try {
      await env.client.create(replicaSet(ns, "slow", 1, { minReadySeconds: 2 }));
      const st = await eventually(async () => {
        const o = await env.client.get<ReplicaSet>(RS, "slow", ns);
        return o.status?.readyReplicas === 1 ? o.status : undefined;
      }, "ready");
      const pod = (await podsOf(ns, "slow"))[0];
      const readyAt = Date.parse(
        pod?.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "",
      );
      // Not available while the Pod has been ready for less than 2 s.
      if (Date.now() < readyAt + 1_500) expect(st.availableReplicas ?? 0).toBe(0);
      await eventually(async () => {
        const o = await env.client.get<ReplicaSet>(RS, "slow", ns);
        return o.status?.availableReplicas === 1;
      }, "available after minReadySeconds");
      expect(Date.now()).toBeGreaterThanOrEqual(readyAt + 2_000);
    } finally {
      await ready.stop();
    }
  });
});

describe("slowStartBatch", () => {
  it("runs batches of 1, 2, 4, ... and stops after the first batch with a failure", async () => {
    let calls = 0;
    const r = await slowStartBatch(20, 1, async () => {
      calls++;
      if (calls === 5) throw new Error("quota");
    });
    // Batches 1, 2 succeed; the batch of 4 (calls 4-7) holds the failure; nothing after.
    expect(calls).toBe(7);
    expect(r.successes).toBe(6);
    expect(r.errors).toHaveLength(1);
    const all = await slowStartBatch(10, 1, async () => {});
    expect(all).toEqual({ successes: 10, errors: [] });
  });
});

describe("Expectations", () => {
  it("holds a key back until every expected creation and deletion is seen, or they expire", () => {
    let t = 0;
    const x = new Expectations(() => t);
    expect(x.satisfied("ns/a")).toBe(true);
    x.expectCreations("ns/a", 2);
    x.creationObserved("ns/a");
    expect(x.satisfied("ns/a")).toBe(false);
    x.creationObserved("ns/a");
    expect(x.satisfied("ns/a")).toBe(true);
    x.expectDeletions("ns/a", ["u1", "u2"]);
    x.deletionObserved("ns/a", "u1");
    x.deletionObserved("ns/a", "u1"); // the same Pod seen twice counts once
    expect(x.satisfied("ns/a")).toBe(false);
    t += EXPECTATIONS_TTL_MS + 1;
    expect(x.satisfied("ns/a")).toBe(true);
  });
});

describe("sortPodsForDeletion", () => {
  const pod = (
    name: string,
    o: Partial<{ node: string; phase: string; ready: string; created: string; restarts: number }>,
  ): Pod => ({
    ...POD,
    metadata: { name, creationTimestamp: o.created ?? "2026-01-01T00:00:00Z" },
    spec: { containers: [], ...(o.node ? { nodeName: o.node } : {}) },
    status: {
      phase: o.phase ?? "Running",
      conditions: o.ready ? [{ type: "Ready", status: "True", lastTransitionTime: o.ready }] : [],
      containerStatuses: [
        { name: "c", image: "", imageID: "", ready: true, restartCount: o.restarts ?? 0 },
      ],
    },
  });
  it.each([
    ["unscheduled before scheduled", pod("a", { node: "n1" }), pod("b", {})],
    [
      "pending before running",
      pod("a", { node: "n1" }),
      pod("b", { node: "n2", phase: "Pending" }),
    ],
    [
      "not ready before ready",
      pod("a", { node: "n1", ready: "2026-01-01T00:00:00Z" }),
      pod("b", { node: "n2" }),
    ],
    [
      "ready for less time first",
      pod("a", { node: "n1", ready: "2026-01-01T00:00:00Z" }),
      pod("b", { node: "n2", ready: "2026-01-02T00:00:00Z" }),
    ],
    ["more restarts first", pod("a", { node: "n1" }), pod("b", { node: "n2", restarts: 3 })],
    [
      "newer first",
      pod("a", { node: "n1", created: "2026-01-01T00:00:00Z" }),
      pod("b", { node: "n2", created: "2026-01-02T00:00:00Z" }),
    ],
  ])("%s", (_, keep, drop) => {
    expect(sortPodsForDeletion([keep, drop]).map((p) => p.metadata.name)).toEqual(["b", "a"]);
  });
  it("more Pods on the same node first", () => {
    const pods = [pod("a", { node: "n1" }), pod("b", { node: "n2" }), pod("c", { node: "n2" })];
    expect(sortPodsForDeletion(pods)[0]?.metadata.name).not.toBe("a");
  });
});
