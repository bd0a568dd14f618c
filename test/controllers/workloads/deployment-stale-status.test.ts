/**
 * A rolling update reads its ReplicaSets' reported availability, and a
 * ReplicaSet just scaled down reports the Pods it is deleting as available until
 * its status catches up. Here the Deployment controller runs alone and the test
 * writes the ReplicaSets' status, holding the old one's stale: the controller
 * counts it for no more than its replicas, so it never takes the old Pods down
 * twice and availability stays within maxUnavailable.
 */
import type { Deployment, ReplicaSet } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { BUILTIN_CONTROLLER_NAMES } from "../../../src/controllers/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually, startControllers } from "../helpers.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter((n) => n !== "deployment"),
  }),
);

const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;

async function setOf(ns: string, image: string): Promise<ReplicaSet | undefined> {
  const list = await env.client.list<ReplicaSet>(RS, { namespace: ns });
  return list.items.find((rs) => rs.spec?.template?.spec?.containers[0]?.image === image);
}

/** Writes `rs`'s status as its controller would: `available` of its Pods available. */
async function report(rs: ReplicaSet, replicas: number, available: number): Promise<void> {
  const fresh = await env.client.get<ReplicaSet>(RS, rs.metadata.name ?? "", rs.metadata.namespace);
  await env.client.updateStatus<ReplicaSet>({
    ...fresh,
    status: {
      replicas,
      readyReplicas: available,
      availableReplicas: available,
      observedGeneration: fresh.metadata.generation,
    },
  });
}

describe("a rolling update with a ReplicaSet's status behind", () => {
  it("counts an old ReplicaSet for no more than its replicas", async () => {
    const ns = await freshNamespace(env.client, "stale");
    // 4 replicas, 1 surge, 1 unavailable: at least 3 available at every moment.
    const d: Deployment = {
      ...DEPLOY,
      metadata: { name: "web", namespace: ns },
      spec: {
        replicas: 4,
        selector: { matchLabels: { app: "web" } },
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "c", image: "v1" }] },
        },
      },
    };
    await env.client.create(d);
    const v1 = await eventually(() => setOf(ns, "v1"), "the first ReplicaSet");
    await report(v1, 4, 4);

    await env.client.patch(
      DEPLOY,
      "web",
      ns,
      { spec: { template: { spec: { containers: [{ name: "c", image: "v2" }] } } } },
      { type: "strategic" },
    );
    // The new ReplicaSet surges to 1 and the old one goes down to 3 (4 + 1 - 3 - 1 = 1 may go).
    await eventually(async () => {
      const old = await setOf(ns, "v1");
      return old?.spec?.replicas === 3 || undefined;
    }, "the old ReplicaSet scaled down to 3");
    // The old ReplicaSet's status stays at 4 available (its Pod being deleted
    // still counted); the new one's first Pod becomes available.
    const v2 = await eventually(() => setOf(ns, "v2"), "the new ReplicaSet");
    await report(v2, 1, 1);
    // Really available: 3 old + 1 new = 4, so 1 old Pod may go (to 2), and
    // the new ReplicaSet surges to keep 5 in all (3). Counting the stale 4 would
    // take 2 (to 1): 1 + the new one's 1 available would be 2 < 3.
    await eventually(async () => {
      const old = await setOf(ns, "v1");
      const nw = await setOf(ns, "v2");
      return (old?.spec?.replicas === 2 && nw?.spec?.replicas === 3) || undefined;
    }, "the old ReplicaSet at 2 and the new one at 3");
    // Nothing else changes until a status does.
    await new Promise((r) => setTimeout(r, 500));
    expect((await setOf(ns, "v1"))?.spec?.replicas).toBe(2);
    expect((await setOf(ns, "v2"))?.spec?.replicas).toBe(3);
  });
});
