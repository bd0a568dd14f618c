/**
 * The controller manager against a real apiserver: controllers switched off by
 * name, two managers under leader election (only the leader acts; the standby
 * takes over when it leaves), and the metrics and health endpoints.
 */

import type { KubeObject } from "@setpoint/api";
import { afterAll, describe, expect, it } from "vitest";
import {
  BUILTIN_CONTROLLER_NAMES,
  CONTROLLER_MANAGER_LEASE,
  type ControllerManager,
  createControllerManager,
  OFF_BY_DEFAULT_CONTROLLERS,
  UnknownControllerError,
} from "../../src/controllers/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile } from "../helpers/test-server.ts";
import { CM, configMap, eventually, gone, NS, refTo, startControllers } from "./helpers.ts";

const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;
const ELECTION = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };

// Each test runs the controllers it tests.
const env = startForFile(() => startTestEnv({ controllers: false }));
const managers: ControllerManager[] = [];

afterAll(async () => {
  for (const m of managers) await m.stop();
});

async function start(opts: Parameters<typeof startControllers>[0]): Promise<ControllerManager> {
  const m = await startControllers({ restConfig: env.config, ...opts });
  managers.push(m);
  return m;
}

async function ownerWithDependents(ns: string, n: number): Promise<void> {
  const owner = await configMap(env.client, ns, "owner");
  for (let i = 0; i < n; i++)
    await configMap(env.client, ns, `dep-${i}`, { owners: [refTo(owner)] });
}

async function remaining(ns: string): Promise<number> {
  return (await env.client.list<KubeObject>(CM, { namespace: ns })).items.length;
}

describe("controller manager", () => {
  it("names its controllers and refuses unknown names", () => {
    expect(BUILTIN_CONTROLLER_NAMES.slice(0, 10)).toEqual([
      "garbage-collector",
      "namespace",
      "event-ttl",
      "serviceaccount",
      "replicaset",
      "deployment",
      "node-lifecycle",
      "pod-garbage-collector",
      "endpoint",
      "endpointslice",
    ]);
    expect(BUILTIN_CONTROLLER_NAMES).toContain("clusterrole-aggregation");
    expect(BUILTIN_CONTROLLER_NAMES).toContain("scheduler");
    expect(BUILTIN_CONTROLLER_NAMES).toContain("job");
    expect(BUILTIN_CONTROLLER_NAMES).toContain("ttl-after-finished");
    expect(() => createControllerManager({ restConfig: env.config, disabled: ["gc"] })).toThrow(
      UnknownControllerError,
    );
  });

  it("runs without a controller switched off by name", async () => {
    const m = await start({ disabled: ["garbage-collector"] });
    // Those off by default (the root CA publisher) run only when enabled.
    expect(m.names).toEqual(
      BUILTIN_CONTROLLER_NAMES.filter(
        (n) => n !== "garbage-collector" && !OFF_BY_DEFAULT_CONTROLLERS.includes(n),
      ),
    );
    const ns = await freshNamespace(env.client);
    await ownerWithDependents(ns, 2);
    await env.client.delete(CM, "owner", ns);
    // The namespace controller acts on a later change: the manager is running.
    const probe = await freshNamespace(env.client);
    await env.client.delete(NS, probe);
    await eventually(() => gone(env.client, NS, probe), "namespace controller acted");
    expect(await remaining(ns)).toBe(2);
    await m.stop();
  });

  it("lets only the leader act; the standby takes over when the leader leaves", async () => {
    const a = await start({ identity: "cm-a", leaderElection: ELECTION });
    const b = await start({ identity: "cm-b", leaderElection: ELECTION });
    await eventually(() => a.manager.isLeader || b.manager.isLeader, "a leader");
    const [leader, standby] = a.manager.isLeader ? [a, b] : [b, a];
    expect(standby.manager.isLeader).toBe(false);
    const lease = await env.client.get<KubeObject>(LEASE, CONTROLLER_MANAGER_LEASE, "kube-system");
    expect((lease.spec as { holderIdentity?: string }).holderIdentity).toBe(
      leader.manager.identity,
    );
    // The finalizers the built-in loops remove are declared on it.
    expect(lease.metadata.annotations?.["setpoint.dev/finalizers"]).toBe(
      "foregroundDeletion,kubernetes,orphan",
    );

    const ns = await freshNamespace(env.client);
    await ownerWithDependents(ns, 5);
    await env.client.delete(CM, "owner", ns);
    await eventually(async () => (await remaining(ns)) === 0, "cascade by the leader");
    expect(leader.manager.client.stats.byVerb.delete ?? 0).toBeGreaterThanOrEqual(5);
    expect(standby.manager.client.stats.byVerb.delete ?? 0).toBe(0);

    await leader.stop(); // releases the Lease
    await eventually(() => standby.manager.isLeader, "standby took over");
    const ns2 = await freshNamespace(env.client);
    await ownerWithDependents(ns2, 3);
    await env.client.delete(CM, "owner", ns2);
    await eventually(async () => (await remaining(ns2)) === 0, "cascade by the new leader");
    expect(standby.manager.client.stats.byVerb.delete ?? 0).toBeGreaterThanOrEqual(3);
    await standby.stop();
  });

  it("serves /metrics, /healthz and /readyz", async () => {
    const m = await start({ metricsAddr: "127.0.0.1:0", healthAddr: "127.0.0.1:0" });
    const health = `http://${m.manager.healthAddress}`;
    const metrics = `http://${m.manager.metricsAddress}`;
    expect((await fetch(`${health}/healthz`)).status).toBe(200);
    const ready = await eventually(async () => {
      const r = await fetch(`${health}/readyz?verbose`);
      return r.status === 200 ? r.text() : undefined;
    }, "ready");
    expect(ready).toContain("[+]garbage-collector ok");
    expect(ready).toContain("[+]event-ttl ok");
    const ns = await freshNamespace(env.client);
    await ownerWithDependents(ns, 1);
    await env.client.delete(CM, "owner", ns);
    await eventually(async () => (await remaining(ns)) === 0, "cascade");
    const text = await (await fetch(`${metrics}/metrics`)).text();
    expect(text).toMatch(/controller_runtime_reconcile_total\{controller="garbage-collector"/);
    expect(text).toMatch(/workqueue_adds_total\{name="namespace"/);
    // The collector runs as many workers as Kubernetes' (--concurrent-gc-syncs).
    expect(text).toMatch(
      /controller_runtime_max_concurrent_reconciles\{controller="garbage-collector"\} 20\n/,
    );
    await m.stop();
  });
});
