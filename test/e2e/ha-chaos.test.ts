/**
 * Faults under load on `setpoint dev-cluster`: while writers create, update and
 * delete ConfigMaps through the runtime's client (given both apiservers), a
 * reflector watches them and a prober sends HTTP through the gateway to a
 * Deployment's Pods, the leading controller manager, the apiserver the clients use
 * and the etcd leader are killed with SIGKILL, all at once, and a rolling update of
 * the Deployment starts. Then: the standby controller manager leads, with no overlap
 * of leaders on the Lease; no acknowledged write is lost; the watcher saw every
 * acknowledged change once and in order (or re-listed after a 410); the rollout
 * finished; no gateway request failed. The figures are printed.
 *
 * SETPOINT_CHAOS_LONG=1 runs the longer version: each fault alone, one after the
 * other with the cluster left to settle between them under the same load (first
 * the leading controller manager paused with SIGSTOP past its lease and resumed:
 * it must step down without taking the Lease back; then SIGKILL of the new leader,
 * of apiserver-0 and of the etcd leader), then the rolling update on the survivors.
 */
import { readFileSync } from "node:fs";
import type { Deployment, KubeObject } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import { EtcdClient } from "../../src/storage/etcd/index.ts";
import { DevCluster } from "../helpers/dev-cluster.ts";
import { describeWithEtcd } from "../helpers/etcd.ts";
import { GatewayProber, getWithHost, LeaseObserver, Watcher, Writers } from "../helpers/ha-load.ts";
import { Kubectl } from "./helpers/kubectl.ts";

const LONG = process.env.SETPOINT_CHAOS_LONG === "1";
const NS = "chaos";
const HOST = "web.chaos.test";
const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;

const APP = `
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${NS}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: hello
        env: [{name: VERSION, value: "1"}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${NS}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: ${NS}}
spec:
  rules:
  - host: ${HOST}
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

describeWithEtcd("the dev cluster under faults", () => {
  let cluster: DevCluster | undefined;
  let kubectl: Kubectl | undefined;
  const closers: (() => unknown)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
    await kubectl?.close();
    await cluster?.destroy();
  });

  it(
    LONG
      ? "keeps every promise through each fault in turn"
      : "keeps every promise when the leading controller manager, an apiserver and the etcd leader die at once",
    async () => {
      cluster = DevCluster.start();
      await cluster.ready();
      const c = cluster;
      kubectl = new Kubectl(c.kubeconfig);
      await kubectl.ok(["apply", "-f", "-"], { input: APP });
      const config = loadKubeconfig({ path: c.kubeconfig });
      const client = new Client({ ...config, timeoutMs: 10_000 });
      closers.push(() => client.close());
      const gatewayUrl = c.process("gateway").address ?? "";
      await until(
        "the app served through the gateway",
        async () => {
          const r = await getWithHost(gatewayUrl, HOST);
          return r.status === 200;
        },
        60_000,
      );

      // The load.
      // The watcher first: every write after it is open must reach it as an event.
      const watcher = new Watcher(new Client(config), NS);
      await watcher.watching();
      const writers = new Writers(client, NS, 3);
      const prober = new GatewayProber(gatewayUrl, HOST);
      const leases = new LeaseObserver(client, "kube-system", "setpoint-controller-manager");
      closers.push(
        () => writers.stop(),
        () => watcher.stop(),
        () => prober.stop(),
        () => leases.stop(),
      );
      await sleep(LONG ? 5_000 : 2_000);

      const etcd = new EtcdClient({
        endpoints: c.processes().flatMap((p) => (p.role === "etcd" ? [p.address ?? ""] : [])),
        dialTimeoutMs: 1_000,
        requestTimeoutMs: 2_000,
      });
      closers.push(() => etcd.close());
      const figures: string[] = [];
      const killed = new Set<string>();
      const kill = (name: string) => {
        process.kill(c.process(name).pid, "SIGKILL");
        killed.add(name);
      };

      /** The controller manager whose identity holds the Lease (from its log). */
      const leadingManager = () =>
        c
          .processes()
          .filter((p) => p.role === "controller-manager" && !killed.has(p.name))
          .find((p) => readFileSync(p.logFile, "utf8").includes(`"identity":"${leases.holder}"`));
      /** The etcd member that is the raft leader. */
      const etcdLeader = async () => {
        for (const p of c.processes().filter((x) => x.role === "etcd" && !killed.has(x.name))) {
          const s = await etcd.status(p.address).catch(() => undefined);
          if (s && s.leader !== 0 && s.leader === s.header.member_id) return p.name;
        }
        return undefined;
      };

      const killManager = async () => {
        const leader = await until(
          "a leading controller manager",
          async () => leadingManager(),
          20_000,
        );
        const holder = leases.holder;
        const t0 = Date.now();
        kill(leader.name);
        return async () => {
          const next = await leases.nextHolder(holder, t0, 45_000);
          const lease = leases.samples.at(-1)?.durationMs ?? 0;
          figures.push(
            `controller manager: ${leader.name} killed, standby led after ${((next.at - t0) / 1000).toFixed(1)} s (lease ${lease / 1000} s)`,
          );
        };
      };
      const killApiserver = (name: string) => {
        kill(name);
        figures.push(`apiserver: ${name} killed`);
      };
      const killEtcdLeader = async () => {
        const name = await until("an etcd leader", etcdLeader, 20_000);
        kill(name);
        figures.push(`etcd: leader ${name} killed`);
      };

      const rollout = async () => {
        await client.patch(
          DEPLOY,
          "web",
          NS,
          {
            spec: {
              template: {
                spec: { containers: [{ name: "web", env: [{ name: "VERSION", value: "2" }] }] },
              },
            },
          },
          { type: "strategic" },
        );
        await until(
          "the rollout to finish",
          async () => {
            const d = await client.get<Deployment & KubeObject>(DEPLOY, "web", NS);
            const s = d.status ?? {};
            return (
              (s.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) &&
              s.updatedReplicas === 2 &&
              s.availableReplicas === 2 &&
              (s.replicas ?? 0) === 2
            );
          },
          90_000,
        );
      };

      const faultStart = Date.now();
      /**
       * SIGSTOP the leading manager past its lease: the standby takes over; on SIGCONT
       * the paused one must step down without taking the Lease back.
       */
      const pauseManager = async () => {
        const paused = await until(
          "a leading controller manager",
          async () => leadingManager(),
          20_000,
        );
        const holder = leases.holder;
        const t0 = Date.now();
        process.kill(paused.pid, "SIGSTOP");
        let next: { holder: string; at: number };
        try {
          next = await leases.nextHolder(holder, t0, 45_000);
          await sleep(3_000);
        } finally {
          process.kill(paused.pid, "SIGCONT");
        }
        const resumed = Date.now();
        await until(
          "the resumed manager to step down",
          async () => readFileSync(paused.logFile, "utf8").includes('"msg":"lost leadership"'),
          20_000,
        );
        await sleep(5_000);
        const after = leases.holdersSince(resumed);
        figures.push(
          `controller manager: ${paused.name} paused (SIGSTOP), standby led after ${((next.at - t0) / 1000).toFixed(1)} s; resumed, it stepped down and the Lease ${after.length === 1 && after[0] === next.holder ? "stayed with the new leader" : `went to ${after.join(", ")}`}`,
        );
        expect(after).toEqual([next.holder]);
      };

      if (LONG) {
        await pauseManager();
        await sleep(5_000);
        const managerDone = await killManager();
        await managerDone();
        await sleep(5_000);
        killApiserver("apiserver-0");
        await sleep(10_000);
        await killEtcdLeader();
        await sleep(10_000);
        await rollout();
      } else {
        const managerDone = await killManager();
        killApiserver("apiserver-0");
        await killEtcdLeader();
        const rolled = rollout();
        await managerDone();
        await rolled;
      }
      const faultEnd = Date.now();
      await sleep(1_000);

      await writers.stop();
      await prober.stop();
      await leases.stop();
      const lost = await writers.lost(client);
      // A last write after all others: once the watcher has it, it has had every earlier event.
      const sentinel = await client.create<KubeObject>({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "sentinel", namespace: NS },
      });
      const sentinelRv = Number(sentinel.metadata.resourceVersion);
      await until(
        "the watcher to see the last write",
        async () => watcher.seen.some((e) => e.rv >= sentinelRv),
        30_000,
      );
      await watcher.stop();
      const watch = watcher.verify(writers.acked);
      const { changes, overlaps } = leases.transitions();
      console.log(
        [
          `ha chaos (${LONG ? "long" : "short"}):`,
          ...figures.map((f) => `  ${f}`),
          `  writes acknowledged ${writers.acked.length}, lost ${lost.length}, failed (unacknowledged) ${writers.failed}; write p99 ${writers.p99().toFixed(0)} ms overall, ${writers.p99(faultStart, faultEnd).toFixed(0)} ms during the faults`,
          `  watch events expected ${watch.expected}, seen ${watch.seen}, missed ${watch.missed}, duplicated ${watch.duplicates}, out of order ${watch.outOfOrder}; relists ${watch.relists}, rewatches ${watch.rewatches}`,
          `  leader changes ${changes}, leader overlaps ${overlaps}`,
          `  gateway requests ${prober.ok + prober.failed}, failed ${prober.failed}${prober.failures.length ? ` (${prober.failures.slice(0, 3).join("; ")})` : ""}; versions served ${[...prober.versions].map(([v, n]) => `${v}×${n}`).join(", ")}`,
          "  Deployment web: rollout to VERSION=2 finished",
        ].join("\n"),
      );
      expect(
        lost.map((w) => ({
          ...w,
          failedLater: writers.unacknowledged.filter((u) => u.name === w.name),
        })),
      ).toEqual([]);
      expect(watch.outOfOrder).toBe(0);
      expect(watch.duplicates).toBe(0);
      const context = watch.missedWrites.map((w) => ({
        write: w,
        seenOfIt: watcher.seen.filter((e) => e.name === w.name),
        acksOfIt: writers.acked.filter((a) => a.name === w.name),
      }));
      if (watch.relists === 0) expect(context).toEqual([]);
      expect(changes).toBeGreaterThanOrEqual(LONG ? 2 : 1);
      expect(overlaps).toBe(0);
      expect(prober.failed, prober.failures.join("\n")).toBe(0);
      expect(prober.versions.get("2") ?? 0).toBeGreaterThan(0);
    },
    LONG ? 600_000 : 240_000,
  );
});
