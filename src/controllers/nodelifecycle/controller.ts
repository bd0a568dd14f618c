/**
 * The node lifecycle controller (`node-lifecycle`):
 *
 * - node health: a Node whose Lease in kube-node-lease and whose Ready
 *   condition's heartbeat have not moved for the grace period (Kubernetes'
 *   --node-monitor-grace-period, 50 s) has every condition set to Unknown
 *   (reason NodeStatusUnknown, "Kubelet stopped posting node status."; a
 *   condition never posted: NodeStatusNeverUpdated). The clock is this
 *   process's: the time it last saw the Lease or heartbeat change, so other
 *   machines' clocks never matter;
 * - taints from conditions: node.kubernetes.io/not-ready (Ready=False) and
 *   node.kubernetes.io/unreachable (Ready=Unknown), NoSchedule and NoExecute
 *   (with timeAdded), node.kubernetes.io/unschedulable:NoSchedule on a
 *   cordoned Node; removed when the condition clears;
 * - Events on the Node, from `node-controller` as Kubernetes words them:
 *   RegisteredNode ("Node NAME event: Registered Node NAME in Controller") when
 *   this process first sees it, NodeNotReady ("Node NAME status is now:
 *   NodeNotReady") when its Ready condition stops being True;
 * - taint eviction: a Pod on a Node with NoExecute taints is deleted once its
 *   matching toleration's tolerationSeconds have run out, at once when it does
 *   not tolerate a taint; first its DisruptionTarget condition is set and a
 *   TaintManagerEviction Event recorded ("Marking for deletion Pod ns/name").
 */
import type { KubeObject, Node, NodeCondition, Pod } from "@setpoint/api";
import {
  type Client,
  type EventRecorder,
  type Informer,
  isConflict,
  isNotFound,
  type Manager,
  type ReconcileContext,
  Recorder,
  type Request,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import { evictionTime, readyCondition, reconcileTaints } from "./taints.ts";

/** The controller's name (what `--disable` takes). */
export const NODE_LIFECYCLE_CONTROLLER = "node-lifecycle";
/** Kubernetes' --node-monitor-grace-period default. */
export const DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS = 50_000;
/** Where nodes renew their Leases. */
export const NODE_LEASE_NAMESPACE = "kube-node-lease";
/** The Events' source component for taint eviction, as Kubernetes names it. */
export const TAINT_EVICTION_EVENT_SOURCE = "taint-eviction-controller";
/** The Node Events' source component, as Kubernetes names it. */
export const NODE_CONTROLLER_EVENT_SOURCE = "node-controller";
/** Concurrent Node reconciles. */
export const DEFAULT_NODE_LIFECYCLE_WORKERS = 4;
/**
 * Concurrent Pod evictions. Kubernetes' taint eviction deletes each Pod whose
 * toleration ran out on a timer of its own; the Pods of a lost node all come due
 * at once, so evictions get more workers than Node reconciles.
 */
export const DEFAULT_TAINT_EVICTION_WORKERS = 16;

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;
const NODE_NAME_INDEX = "spec.nodeName";
const NODE_CONDITIONS = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

export interface NodeLifecycleOptions {
  /** How long a Node may go without a Lease renewal or heartbeat, in ms (default 50 s). */
  nodeMonitorGracePeriodMs?: number;
  /** Concurrent Node reconciles (default 4). */
  workers?: number;
  /** Concurrent Pod evictions (default 16). */
  evictionWorkers?: number;
}

interface Lease extends KubeObject {
  spec?: { renewTime?: string; holderIdentity?: string };
}

/** Kubernetes' timestamp form (seconds). */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/** The Node's conditions with the four kubelet ones Unknown (an unchanged list: undefined). */
export function unknownConditions(node: Node, now: string): NodeCondition[] | undefined {
  const conditions = (node.status?.conditions ?? []).map((c) => ({ ...c }));
  let changed = false;
  for (const type of NODE_CONDITIONS) {
    const c = conditions.find((x) => x.type === type);
    if (!c) {
      conditions.push({
        type,
        status: "Unknown",
        reason: "NodeStatusNeverUpdated",
        message: "Kubelet never posted node status.",
        lastHeartbeatTime: node.metadata.creationTimestamp,
        lastTransitionTime: now,
      });
      changed = true;
    } else if (c.status !== "Unknown") {
      c.status = "Unknown";
      c.reason = "NodeStatusUnknown";
      c.message = "Kubelet stopped posting node status.";
      c.lastTransitionTime = now;
      changed = true;
    }
  }
  return changed ? conditions : undefined;
}

interface Probe {
  renewTime: string | undefined;
  heartbeat: string | undefined;
  /** When this process last saw either move (ms). */
  at: number;
}

export class NodeLifecycleController implements BuiltinController {
  readonly name = NODE_LIFECYCLE_CONTROLLER;
  readonly gracePeriodMs: number;
  private nodes!: Informer<Node>;
  private leases!: Informer<Lease>;
  private pods!: Informer<Pod>;
  private recorder!: EventRecorder;
  private nodeRecorder!: EventRecorder;
  private readonly probes = new Map<string, Probe>();
  /** Each Node's UID and Ready status when last reconciled, by name. */
  private readonly readiness = new Map<string, { uid: string; ready: string | undefined }>();

  constructor(private readonly opts: NodeLifecycleOptions = {}) {
    this.gracePeriodMs = opts.nodeMonitorGracePeriodMs ?? DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS;
    if (!(this.gracePeriodMs > 0))
      throw new RangeError("the node monitor grace period must be positive");
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: TAINT_EVICTION_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.nodeRecorder = new Recorder(client, {
      component: NODE_CONTROLLER_EVENT_SOURCE,
      instance: mgr.identity,
    });
    this.nodes = mgr.cache.informerFor<Node>(NODE);
    this.leases = mgr.cache.informerFor<Lease>(LEASE, { namespace: NODE_LEASE_NAMESPACE });
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.pods.addIndex(NODE_NAME_INDEX, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    const workers = this.opts.workers ?? DEFAULT_NODE_LIFECYCLE_WORKERS;
    mgr
      .controller(NODE_LIFECYCLE_CONTROLLER)
      .for(NODE)
      .watches<Lease>(LEASE, (l) => [{ name: l.metadata.name ?? "" }], {
        scope: { namespace: NODE_LEASE_NAMESPACE },
      })
      .withOptions({ client, maxConcurrentReconciles: workers })
      .complete((req, ctx) => this.reconcileNode(req, ctx));
    mgr
      .controller(`${NODE_LIFECYCLE_CONTROLLER}-taint-eviction`)
      .for(POD)
      .watches<Node>(NODE, (n) =>
        this.pods
          .byIndex(NODE_NAME_INDEX, n.metadata.name ?? "")
          .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name ?? "" })),
      )
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.evictionWorkers ?? DEFAULT_TAINT_EVICTION_WORKERS,
      })
      .complete((req, ctx) => this.reconcilePod(req, ctx));
  }

  /** Notes when the Node's Lease or heartbeat last moved; returns that time. */
  private probe(node: Node, now: number): number {
    const name = node.metadata.name ?? "";
    const renewTime = this.leases.get(name, NODE_LEASE_NAMESPACE)?.spec?.renewTime;
    const heartbeat = readyCondition(node)?.lastHeartbeatTime;
    const p = this.probes.get(name);
    if (!p || p.renewTime !== renewTime || p.heartbeat !== heartbeat) {
      this.probes.set(name, { renewTime, heartbeat, at: now });
      return now;
    }
    return p.at;
  }

  private async reconcileNode(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    let node = this.nodes.get(req.name);
    if (!node) {
      this.probes.delete(req.name);
      this.readiness.delete(req.name);
      return undefined;
    }
    this.recordReadiness(node);
    const now = Date.now();
    const left = this.probe(node, now) + this.gracePeriodMs - now;
    if (left <= 0) {
      const conditions = unknownConditions(node, stamp(now));
      if (conditions) {
        node = await ctx.client.updateStatus<Node>({
          ...structuredClone(node),
          status: { ...structuredClone(node.status ?? {}), conditions },
        });
        ctx.log.info("node stopped posting status: conditions Unknown");
        this.recordReadiness(node);
      }
    }
    const taints = reconcileTaints(node, stamp(now));
    if (taints) {
      const copy = structuredClone(node);
      await ctx.client.update<Node>({ ...copy, spec: { ...(copy.spec ?? {}), taints } });
    }
    return left > 0 ? { requeueAfter: left } : undefined;
  }

  /** RegisteredNode the first time a Node is seen, NodeNotReady when Ready stops being True. */
  private recordReadiness(node: Node): void {
    const uid = node.metadata.uid ?? "";
    const name = node.metadata.name ?? "";
    const ready = readyCondition(node)?.status;
    const seen = this.readiness.get(name);
    if (seen?.uid !== uid) {
      this.nodeRecorder.normal(
        node,
        "RegisteredNode",
        `Node ${name} event: Registered Node ${name} in Controller`,
      );
    } else if (seen.ready === "True" && ready !== "True") {
      this.nodeRecorder.normal(node, "NodeNotReady", `Node ${name} status is now: NodeNotReady`);
    }
    this.readiness.set(name, { uid, ready });
  }

  private async reconcilePod(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const pod = this.pods.get(req.name, req.namespace);
    if (!pod?.spec?.nodeName || pod.metadata.deletionTimestamp) return undefined;
    const node = this.nodes.get(pod.spec.nodeName);
    if (!node) return undefined;
    const now = Date.now();
    const at = evictionTime(pod, node.spec?.taints ?? [], now);
    if (at === undefined) return undefined;
    if (at > now) return { requeueAfter: at - now };
    const ns = pod.metadata.namespace ?? "";
    const name = pod.metadata.name ?? "";
    this.recorder.normal(pod, "TaintManagerEviction", `Marking for deletion Pod ${ns}/${name}`);
    try {
      await ctx.client.patch(
        POD,
        name,
        ns,
        {
          status: {
            conditions: [
              {
                type: "DisruptionTarget",
                status: "True",
                reason: "DeletionByTaintManager",
                message: "Taint manager: deleting due to NoExecute taint",
                lastTransitionTime: stamp(now),
              },
            ],
          },
        },
        { type: "strategic", subresource: "status" },
      );
      await ctx.client.delete(POD, name, ns, { preconditions: { uid: pod.metadata.uid } });
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
    return undefined;
  }
}
