/**
 * The scheduler (`scheduler`, Events from `default-scheduler`): binds each
 * pending Pod whose spec.schedulerName is default-scheduler to a node through
 * the Pod's `binding` subresource, as kube-scheduler does.
 *
 * Each reconcile of a Pod that is unbound, not terminating, not terminated and
 * not gated by spec.schedulingGates:
 * 1. checks every Node (filters.ts) against what is placed on it
 *    (node-infos.ts: bound Pods from the informer, plus the Pods this scheduler
 *    has just placed, counted at once so concurrent decisions never share room);
 * 2. ranks the nodes that fit (score.ts) and assumes the Pod on the best one;
 * 3. posts the Binding; on success records `Scheduled` "Successfully assigned
 *    NS/POD to NODE". A failed binding forgets the assumption and is retried
 *    with the runtime's backoff.
 *
 * A Pod that fits nowhere gets a Warning `FailedScheduling` Event and the
 * condition PodScheduled=False, reason Unschedulable, with kube-scheduler's
 * message (fit-error.ts). It waits until the cluster changes in a way that may
 * make room (a Node added, or one whose labels, taints, unschedulable flag,
 * allocatable or Ready condition changed; a bound Pod deleted or terminated),
 * then is tried again after its backoff (1 s doubling to 10 s, Kubernetes'
 * podInitialBackoffSeconds and podMaxBackoffSeconds), and at the latest after
 * UNSCHEDULABLE_RETRY_MS (Kubernetes' podMaxInUnschedulablePodsDuration).
 *
 * Decisions are synchronous (one at a time, as kube-scheduler's scheduling
 * cycle); only the bindings run concurrently, at most `workers` at once.
 */
import type { Node, Pod } from "@setpoint/api";
import {
  type Client,
  type Controller,
  type EventRecorder,
  type Informer,
  isConflict,
  isNotFound,
  type Manager,
  matching,
  type ReconcileContext,
  Recorder,
  type Request,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import { checkNode, type NodeFailure, type PodFacts } from "./filters.ts";
import { fitErrorMessage, NO_NODES_AVAILABLE } from "./fit-error.ts";
import { controllerUid, hostPorts, NodeInfos } from "./node-infos.ts";
import { allocatable, nonZeroRequests, podRequests } from "./resources.ts";
import { type Candidate, pickNode } from "./score.ts";

/** The controller's name (what `--disable` takes). */
export const SCHEDULER_CONTROLLER = "scheduler";
/** The spec.schedulerName this scheduler serves, and its Events' source. */
export const DEFAULT_SCHEDULER_NAME = "default-scheduler";
/** Bindings in flight at once. */
export const DEFAULT_SCHEDULER_WORKERS = 16;
/** First and longest wait before an unschedulable Pod is tried again (Kubernetes: 1 s, 10 s). */
export const INITIAL_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 10_000;
/** An unschedulable Pod is tried again after this long even when nothing changed (Kubernetes: 5 min). */
export const UNSCHEDULABLE_RETRY_MS = 5 * 60_000;

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const NODE = { apiVersion: "v1", kind: "Node" } as const;

export interface SchedulerOptions {
  workers?: number;
}

interface Waiting {
  attempts: number;
  /** When the last attempt failed (ms). */
  failedAt: number;
  /** The cluster changed since. */
  woken: boolean;
}

/** Whether this scheduler should place the Pod. */
export function needsScheduling(p: Pod): boolean {
  if (p.spec?.nodeName || p.metadata.deletionTimestamp) return false;
  if ((p.spec?.schedulerName ?? DEFAULT_SCHEDULER_NAME) !== DEFAULT_SCHEDULER_NAME) return false;
  if ((p.spec?.schedulingGates ?? []).length > 0) return false;
  const phase = p.status?.phase;
  return phase !== "Succeeded" && phase !== "Failed";
}

function key(p: Pod): string {
  return `${p.metadata.namespace ?? ""}/${p.metadata.name ?? ""}`;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** What of a Node may change where Pods fit (not its heartbeats). */
function placementFacts(n: Node): string {
  return JSON.stringify([
    n.metadata.labels,
    n.spec?.taints,
    n.spec?.unschedulable,
    n.status?.allocatable ?? n.status?.capacity,
    n.status?.conditions?.find((c) => c.type === "Ready")?.status,
  ]);
}

export class Scheduler implements BuiltinController {
  readonly name = SCHEDULER_CONTROLLER;
  readonly infos = new NodeInfos();
  private readonly waiting = new Map<string, Waiting>();
  private pods!: Informer<Pod>;
  private nodes!: Informer<Node>;
  private recorder!: EventRecorder;
  private controller!: Controller;
  private wakeQueued = false;

  constructor(private readonly opts: SchedulerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.recorder = new Recorder(client, {
      component: DEFAULT_SCHEDULER_NAME,
      instance: mgr.identity,
    });
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.nodes = mgr.cache.informerFor<Node>(NODE);
    this.pods.addEventHandler({
      onAdd: (p) => this.infos.observe(p),
      onUpdate: (old, p) => {
        this.infos.observe(p);
        const terminated = (x: Pod) =>
          x.status?.phase === "Succeeded" || x.status?.phase === "Failed";
        if (p.spec?.nodeName && terminated(p) && !terminated(old)) this.wake();
      },
      onDelete: (p) => {
        this.infos.forget(p.metadata.uid ?? "");
        this.waiting.delete(key(p));
        if (p.spec?.nodeName) this.wake();
      },
    });
    this.nodes.addEventHandler({
      onAdd: () => this.wake(),
      onUpdate: (old, n) => {
        if (placementFacts(old) !== placementFacts(n)) this.wake();
      },
    });
    this.controller = mgr
      .controller(SCHEDULER_CONTROLLER)
      .for(POD, { predicates: [matching<Pod>(needsScheduling)] })
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_SCHEDULER_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req, ctx));
  }

  /** The cluster changed: every waiting Pod may be tried again (after its backoff). Once per tick. */
  private wake(): void {
    if (this.wakeQueued || this.waiting.size === 0) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      for (const [k, w] of this.waiting) {
        w.woken = true;
        const slash = k.indexOf("/");
        this.controller.enqueue({ namespace: k.slice(0, slash), name: k.slice(slash + 1) });
      }
    });
  }

  private async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const k = `${req.namespace ?? ""}/${req.name}`;
    const pod = this.pods.get(req.name, req.namespace);
    if (!pod || !needsScheduling(pod)) {
      this.waiting.delete(k);
      return undefined;
    }
    if (this.infos.isAssumed(pod.metadata.uid ?? "")) return undefined;
    const w = this.waiting.get(k);
    if (w) {
      const backoff = Math.min(INITIAL_BACKOFF_MS * 2 ** (w.attempts - 1), MAX_BACKOFF_MS);
      const due = w.woken ? w.failedAt + backoff : w.failedAt + UNSCHEDULABLE_RETRY_MS;
      const left = due - Date.now();
      if (left > 0) return { requeueAfter: left };
    }
    const decision = this.decide(pod);
    if (typeof decision === "string") return this.unschedulable(pod, k, decision, ctx);
    return this.bind(pod, k, decision, ctx);
  }

  /** The node to bind to, or the message saying why there is none. */
  private decide(pod: Pod): { node: string } | string {
    const nodes = this.nodes.list();
    if (nodes.length === 0) return NO_NODES_AVAILABLE;
    const facts: PodFacts = { pod, requests: podRequests(pod), ports: hostPorts(pod) };
    const fits: Candidate[] = [];
    const failures: NodeFailure[] = [];
    for (const node of nodes) {
      const alloc = allocatable(node);
      const usage = this.infos.get(node.metadata.name ?? "");
      const failure = checkNode(facts, node, alloc, usage);
      if (failure) failures.push(failure);
      else fits.push({ node, alloc, usage });
    }
    if (fits.length === 0) return fitErrorMessage(pod, nodes.length, failures);
    const best = pickNode(pod, fits, nonZeroRequests(pod), controllerUid(pod));
    return { node: fits[best].node.metadata.name ?? "" };
  }

  private async bind(
    pod: Pod,
    k: string,
    decision: { node: string },
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    const uid = pod.metadata.uid ?? "";
    const ns = pod.metadata.namespace ?? "";
    const name = pod.metadata.name ?? "";
    this.infos.assume(pod, decision.node);
    try {
      await ctx.client.create(
        {
          apiVersion: "v1",
          kind: "Binding",
          metadata: { name, namespace: ns, uid },
          target: { apiVersion: "v1", kind: "Node", name: decision.node },
        },
        { subresource: "binding", parentType: POD },
      );
    } catch (e) {
      this.infos.forget(uid);
      // Gone, or bound meanwhile by someone else: the informer will tell.
      if (isNotFound(e) || isConflict(e)) return undefined;
      this.recorder.warning(pod, "FailedScheduling", `Binding rejected: ${message(e)}`, {
        action: "Scheduling",
      });
      throw e;
    }
    this.waiting.delete(k);
    this.recorder.normal(
      pod,
      "Scheduled",
      `Successfully assigned ${ns}/${name} to ${decision.node}`,
      {
        action: "Binding",
      },
    );
    ctx.log.debug({ node: decision.node }, "bound");
    return undefined;
  }

  private async unschedulable(
    pod: Pod,
    k: string,
    text: string,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    const w = this.waiting.get(k);
    this.waiting.set(k, { attempts: (w?.attempts ?? 0) + 1, failedAt: Date.now(), woken: false });
    this.recorder.warning(pod, "FailedScheduling", text, { action: "Scheduling" });
    // kube-scheduler: Unschedulable when nodes were checked, SchedulerError otherwise.
    const reason = text === NO_NODES_AVAILABLE ? "SchedulerError" : "Unschedulable";
    const current = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
    if (current?.status !== "False" || current.reason !== reason || current.message !== text) {
      try {
        await ctx.client.patch(
          POD,
          pod.metadata.name ?? "",
          pod.metadata.namespace,
          {
            status: {
              conditions: [
                {
                  type: "PodScheduled",
                  status: "False",
                  reason,
                  message: text,
                  lastTransitionTime:
                    current?.status === "False" && current.lastTransitionTime
                      ? current.lastTransitionTime
                      : new Date().toISOString().replace(/\.\d+Z$/, "Z"),
                },
              ],
            },
          },
          { type: "strategic", subresource: "status" },
        );
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    ctx.log.debug({ reason: text }, "unschedulable");
    return { requeueAfter: UNSCHEDULABLE_RETRY_MS };
  }
}
