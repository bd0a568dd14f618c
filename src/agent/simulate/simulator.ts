/**
 * Simulated nodes, as kwok simulates them for Kubernetes: `count` Nodes
 * registered with the kubelet's labels, conditions and fixed resources, kept
 * alive by Lease renewals, whose Pods go through Pending, Running and Ready
 * (and Succeeded for restartPolicy Never and OnFailure, after `runMs`)
 * without any process. A Pod being deleted is removed at once (grace 0), as
 * the kubelet does once its containers have stopped.
 *
 * The Node object, its status and the Pods' status come from the same code as
 * the real agent's (../node/, ../pods/status.ts). Like the kubelet, a
 * simulated node posts its status again as soon as the stored one differs
 * from what it would post (for example after the node lifecycle controller
 * marked it Unknown while its heartbeats were late). API writes per Pod: one
 * status write when it starts (two with a readiness probe), one when it
 * completes, one delete. Leases are renewed from the last copy written (one
 * request per renewal). One Pod watch serves every node of the simulator.
 */
import { deepClone, deepEqual, type KubeObject, type Node, type Pod } from "@setpoint/api";
import {
  type Client,
  Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type Logger,
  mapLimit,
} from "@setpoint/runtime";
import { canonicalJson } from "../canonical-json.ts";
import {
  LEASE_DURATION_SECONDS,
  LEASE_RENEW_INTERVAL_MS,
  microTime,
  NODE_LEASE_NAMESPACE,
  type NodeIdentity,
  type NodeResourceList,
  nodeObject,
  nodeStatus,
} from "../node/index.ts";
import type { PodRecord } from "../pods/record.ts";
import { rfc3339 } from "../pods/record.ts";
import {
  hasReadinessProbe,
  markReady,
  markSucceeded,
  readinessDelayMs,
  runsToCompletion,
  SIMULATED_RUNTIME,
  simulatedRecord,
  simulatedStatus,
} from "./sim-pod.ts";

/** What each simulated node offers (kwok's defaults). */
export const SIMULATED_NODE_RESOURCES: NodeResourceList = {
  cpu: "32",
  "ephemeral-storage": "1Ti",
  memory: "256Gi",
  pods: "110",
};
/** How long a Pod that runs to completion runs, by default. */
export const DEFAULT_SIMULATED_RUN_MS = 1_000;
/** Writes (status, deletes, Lease renewals, registrations) in flight at once. */
export const SIMULATOR_WRITE_CONCURRENCY = 32;
/** The label every simulated Node carries. */
export const SIMULATED_NODE_LABEL = "node.setpoint.dev/simulated";
/** The Node's status is written again after this long even when unchanged (the kubelet's 5 min). */
export const SIMULATED_NODE_REPORT_MS = 5 * 60_000;

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

export interface SimulatorOptions {
  client: Client;
  /** How many nodes. */
  nodes: number;
  /** Node names are PREFIX0, PREFIX1, ... (default "sim-"). */
  prefix?: string;
  /** Lease renewal interval in ms (default 10 s, the kubelet's). */
  heartbeatMs?: number;
  /** How long a Pod with restartPolicy Never or OnFailure runs before it succeeds, in ms. */
  runMs?: number;
  resources?: NodeResourceList;
  kubeletVersion?: string;
  logger?: Logger;
}

interface SimNode {
  identity: NodeIdentity;
  index: number;
  uid?: string;
  lease?: KubeObject;
  /** Registered: its status is kept as this simulator posts it. */
  registered: boolean;
  reporting: boolean;
  lastReport: number;
  /** Pod addresses' last octets in use. */
  used: Set<number>;
}

interface SimPod {
  rec: PodRecord;
  node: SimNode;
  timers: NodeJS.Timeout[];
  deleting: boolean;
}

const NOOP = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

export class Simulator {
  readonly nodes: SimNode[];
  private readonly byName = new Map<string, SimNode>();
  private readonly pods = new Map<string, SimPod>();
  /** Each Pod's status as last written (a copy), to skip writing the same again. */
  private readonly written = new Map<string, unknown>();
  private readonly dirty = new Set<string>();
  private readonly abort = new AbortController();
  private readonly informer: Informer<Pod>;
  private readonly nodeInformer: Informer<Node>;
  private readonly log: Logger;
  private inFlight = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  /** API writes made for Pods (status and deletes), for tests and benchmarks. */
  podWrites = 0;

  constructor(private readonly opts: SimulatorOptions) {
    this.log = opts.logger ?? NOOP;
    const prefix = opts.prefix ?? "sim-";
    this.nodes = Array.from({ length: opts.nodes }, (_, i) => {
      const n: SimNode = {
        index: i,
        identity: {
          name: `${prefix}${i}`,
          address: `10.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
          port: 0,
          runtimeVersion: `${SIMULATED_RUNTIME}://0.1.0`,
          kubeletVersion: opts.kubeletVersion ?? "v1.32.0",
          dataDir: "",
        },
        lastReport: 0,
        registered: false,
        reporting: false,
        used: new Set(),
      };
      this.byName.set(n.identity.name, n);
      return n;
    });
    this.informer = new Informer<Pod>(opts.client, POD, {
      fieldSelector:
        opts.nodes === 1 ? `spec.nodeName=${this.nodes[0].identity.name}` : "spec.nodeName!=",
      backoffInitialMs: 200,
      backoffMaxMs: 7_000,
      logger: this.log,
    });
    this.nodeInformer = new Informer<Node>(opts.client, NODE, {
      labelSelector: `${SIMULATED_NODE_LABEL}=true`,
      backoffInitialMs: 200,
      backoffMaxMs: 7_000,
      logger: this.log,
    });
    this.nodeInformer.addEventHandler({
      onAdd: (n) => this.checkNode(n),
      onUpdate: (_, n) => this.checkNode(n),
    });
    this.informer.addEventHandler({
      onAdd: (p) => this.observe(p),
      onUpdate: (_, p) => this.observe(p),
      onDelete: (p) => this.forget(p.metadata.uid ?? ""),
    });
  }

  /** Registers the Nodes and their Leases, then starts running their Pods. */
  async start(): Promise<void> {
    await mapLimit(this.nodes, SIMULATOR_WRITE_CONCURRENCY, (n) => this.register(n));
    await mapLimit(this.nodes, SIMULATOR_WRITE_CONCURRENCY, (n) => this.renew(n));
    this.nodeInformer.start(this.abort.signal);
    this.informer.start(this.abort.signal);
    await this.informer.waitForSync(this.abort.signal);
    const every = this.opts.heartbeatMs ?? LEASE_RENEW_INTERVAL_MS;
    const beat = () => {
      if (this.abort.signal.aborted) return;
      void mapLimit(this.nodes, SIMULATOR_WRITE_CONCURRENCY, (n) => this.beat(n)).finally(() => {
        if (!this.abort.signal.aborted) this.heartbeat = setTimeout(beat, every);
      });
    };
    this.heartbeat = setTimeout(beat, every);
  }

  /** Stops heartbeats and Pods; the Nodes stay (and go Unknown once their Leases expire). */
  async stop(): Promise<void> {
    this.abort.abort();
    if (this.heartbeat) clearTimeout(this.heartbeat);
    for (const p of this.pods.values()) for (const t of p.timers) clearTimeout(t);
  }

  /** Pods this simulator runs now. */
  get podCount(): number {
    return this.pods.size;
  }

  private async register(n: SimNode): Promise<void> {
    const client = this.opts.client;
    const name = n.identity.name;
    let node: Node | undefined;
    try {
      node = await client.get<Node>(NODE, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!node) {
      const obj = nodeObject(n.identity);
      obj.metadata.labels = { ...obj.metadata.labels, [SIMULATED_NODE_LABEL]: "true" };
      try {
        node = await client.create<Node>(obj);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        node = await client.get<Node>(NODE, name);
      }
    }
    n.uid = node.metadata.uid;
    await this.report(n, node);
    n.registered = true;
  }

  /** The status this simulator would post for the node, as the agent compares it. */
  private essentials(status: Node["status"]): string {
    return canonicalJson({
      conditions: (status?.conditions ?? []).map((c) => [c.type, c.status, c.reason]),
      allocatable: status?.allocatable,
    });
  }

  /** Posts the node's status again when the stored one is not what it would post. */
  private checkNode(node: Node): void {
    const n = this.byName.get(node.metadata.name ?? "");
    if (!n?.registered || n.reporting || this.abort.signal.aborted) return;
    const want = nodeStatus(
      n.identity,
      rfc3339(),
      node.status,
      this.opts.resources ?? SIMULATED_NODE_RESOURCES,
    );
    if (this.essentials(want) === this.essentials(node.status)) return;
    n.reporting = true;
    void this.report(n, node)
      .catch((err: unknown) => {
        this.log.debug({ node: n.identity.name, err: String(err) }, "status report failed");
      })
      .finally(() => {
        n.reporting = false;
      });
  }

  private async report(n: SimNode, node: Node): Promise<void> {
    const status = nodeStatus(
      n.identity,
      rfc3339(),
      node.status,
      this.opts.resources ?? SIMULATED_NODE_RESOURCES,
    );
    // A simulated node is its own host.
    status.addresses = [
      { type: "InternalIP", address: n.identity.address },
      { type: "Hostname", address: n.identity.name },
    ];
    await this.opts.client.updateStatus<Node>({ ...node, status });
    n.lastReport = Date.now();
  }

  private async beat(n: SimNode): Promise<void> {
    try {
      await this.renew(n);
      if (Date.now() - n.lastReport >= SIMULATED_NODE_REPORT_MS) {
        await this.report(n, await this.opts.client.get<Node>(NODE, n.identity.name));
      }
    } catch (err) {
      this.log.debug({ node: n.identity.name, err: String(err) }, "heartbeat failed");
    }
  }

  /** Renews the node's Lease from the copy last written; reads it again only on a conflict. */
  private async renew(n: SimNode): Promise<void> {
    const client = this.opts.client;
    const name = n.identity.name;
    const spec = {
      holderIdentity: name,
      leaseDurationSeconds: LEASE_DURATION_SECONDS,
      renewTime: microTime(),
    };
    if (n.lease) {
      try {
        n.lease = await client.update<KubeObject>({ ...n.lease, spec });
        return;
      } catch (err) {
        n.lease = undefined;
        if (!isConflict(err) && !isNotFound(err)) throw err;
      }
    }
    try {
      const current = await client.get<KubeObject>(LEASE, name, NODE_LEASE_NAMESPACE);
      n.lease = await client.update<KubeObject>({ ...current, spec });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      n.lease = await client.create<KubeObject>({
        ...LEASE,
        metadata: {
          name,
          namespace: NODE_LEASE_NAMESPACE,
          ...(n.uid
            ? { ownerReferences: [{ apiVersion: "v1", kind: "Node", name, uid: n.uid }] }
            : {}),
        },
        spec,
      } as KubeObject);
    }
  }

  private observe(pod: Pod): void {
    const node = this.byName.get(pod.spec?.nodeName ?? "");
    if (!node || this.abort.signal.aborted) return;
    const uid = pod.metadata.uid ?? "";
    let sim = this.pods.get(uid);
    if (!sim) {
      const phase = pod.status?.phase;
      if (phase === "Succeeded" || phase === "Failed") return;
      const ip = pod.status?.podIP ?? this.allocate(node);
      sim = { rec: simulatedRecord(pod, ip), node, timers: [], deleting: false };
      this.pods.set(uid, sim);
      this.schedule(sim);
      this.markDirty(uid);
    }
    sim.rec.pod = pod;
    if (pod.metadata.deletionTimestamp && !sim.deleting) {
      sim.deleting = true;
      for (const t of sim.timers) clearTimeout(t);
      this.markDirty(uid);
    }
  }

  /** Timers for readiness (probe delay) and completion (run time). */
  private schedule(sim: SimPod): void {
    const pod = sim.rec.pod;
    const uid = sim.rec.uid;
    if (hasReadinessProbe(pod)) {
      sim.timers.push(
        setTimeout(() => {
          markReady(sim.rec);
          this.markDirty(uid);
        }, readinessDelayMs(pod)),
      );
    }
    if (runsToCompletion(pod)) {
      sim.timers.push(
        setTimeout(() => {
          markSucceeded(sim.rec);
          this.markDirty(uid);
        }, this.opts.runMs ?? DEFAULT_SIMULATED_RUN_MS),
      );
    }
  }

  private allocate(node: SimNode): string {
    let octet = 2;
    while (node.used.has(octet) && octet < 254) octet++;
    node.used.add(octet);
    const i = node.index;
    return `10.${128 + (i >> 8)}.${i & 255}.${octet}`;
  }

  private forget(uid: string): void {
    const sim = this.pods.get(uid);
    if (!sim) return;
    for (const t of sim.timers) clearTimeout(t);
    sim.node.used.delete(Number(sim.rec.podIP.split(".")[3]));
    this.pods.delete(uid);
    this.written.delete(uid);
    this.dirty.delete(uid);
  }

  private markDirty(uid: string): void {
    this.dirty.add(uid);
    this.pump();
  }

  /** Writes what is dirty, SIMULATOR_WRITE_CONCURRENCY at a time. */
  private pump(): void {
    while (this.inFlight < SIMULATOR_WRITE_CONCURRENCY && this.dirty.size > 0) {
      const uid = this.dirty.values().next().value as string;
      this.dirty.delete(uid);
      const sim = this.pods.get(uid);
      if (!sim) continue;
      this.inFlight++;
      void this.write(sim)
        .catch((err: unknown) => {
          this.log.debug({ uid, err: String(err) }, "pod write failed; will retry");
          if (!this.abort.signal.aborted) {
            setTimeout(() => this.markDirty(uid), 500).unref();
          }
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  private async write(sim: SimPod): Promise<void> {
    const client = this.opts.client;
    const pod = sim.rec.pod;
    const uid = sim.rec.uid;
    const name = pod.metadata.name ?? "";
    const ns = pod.metadata.namespace;
    if (sim.deleting) {
      try {
        await client.delete(POD, name, ns, { gracePeriodSeconds: 0, preconditions: { uid } });
        this.podWrites++;
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
      return;
    }
    const status = simulatedStatus(sim.rec, sim.node.identity.address, pod.status);
    if (deepEqual(this.written.get(uid), status)) return;
    const sent = deepClone(status);
    try {
      await client.patch(
        POD,
        name,
        ns,
        { metadata: { uid }, status },
        { type: "merge", subresource: "status" },
      );
      this.podWrites++;
      this.written.set(uid, sent);
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}
