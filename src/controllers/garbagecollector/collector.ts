/**
 * The garbage collector: deletes objects whose owners are gone, and carries out
 * the Foreground and Orphan deletion policies, as an ordinary controller of the
 * API (no storage access). This file wires its parts into the runtime's Manager
 * and runs the reconcile; the parts are:
 *
 * - which kinds it follows (resource-discovery.ts, monitors.ts): discovery and
 *   metadata-only informers run as a manager runnable, leader or not (a standby
 *   keeps its graph warm), stopped on shutdown, and ready (in /readyz) once
 *   discovery ran and every monitor synced;
 * - the ownership graph (graph.ts) and the monitors' events applied to it
 *   (graph-events.ts), which choose the keys to look at;
 * - the decision (decision.ts, with owner-lookup.ts for whether an owner is there);
 * - the writes (operations.ts).
 *
 * Level-triggered: keys are object UIDs; a monitor's initial list enqueues every
 * object whose owners are not all present, so a collector that was down while
 * owners were deleted catches up when it starts. Invalid references (a
 * cluster-scoped object naming a namespaced owner) are reported with a Warning
 * Event (OwnerRefInvalidNamespace) and the object is left alone.
 */
import {
  type CheckResult,
  type Client,
  type Controller,
  type Logger,
  type Manager,
  type ReconcileContext,
  type Result,
  type Runnable,
  silentLogger,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import { classifyOwners, decideDependent, decideOwner } from "./decision.ts";
import {
  FINALIZER_FOREGROUND,
  FINALIZER_ORPHAN,
  Graph,
  type GraphNode,
  isDeletingDependents,
  isOrphaning,
} from "./graph.ts";
import { GraphEvents } from "./graph-events.ts";
import { Monitors } from "./monitors.ts";
import {
  deleteObject,
  objectOf,
  orphanDependents,
  removeFinalizer,
  removeReferences,
  unblockReferences,
} from "./operations.ts";
import { OwnerLookup } from "./owner-lookup.ts";
import { ResourceDiscovery } from "./resource-discovery.ts";

/** The controller's name (what `--disable` takes). */
export const GARBAGE_COLLECTOR = "garbage-collector";
/** Concurrent reconciles (Kubernetes' --concurrent-gc-syncs default). */
export const DEFAULT_GC_WORKERS = 20;
/** Dependents patched at once while orphaning. */
export const DEFAULT_ORPHAN_CONCURRENCY = 16;
/** Delay before looking again at a key that waits for monitors to sync (ms). */
export const SYNC_RETRY_MS = 200;

export interface GarbageCollectorOptions {
  /** Concurrent reconciles (default DEFAULT_GC_WORKERS). */
  workers?: number;
  /** Re-discovery period in ms (default DEFAULT_DISCOVERY_INTERVAL_MS). */
  discoveryIntervalMs?: number;
  /** Resources ("configmaps", "widgets.example.com") not to monitor. */
  ignoredResources?: readonly string[];
  /** Dependents patched at once while orphaning (default DEFAULT_ORPHAN_CONCURRENCY). */
  orphanConcurrency?: number;
  logger?: Logger;
}

export class GarbageCollector implements BuiltinController, Runnable {
  readonly name = GARBAGE_COLLECTOR;
  readonly graph = new Graph();
  private readonly opts: GarbageCollectorOptions;
  private readonly log: Logger;
  private client!: Client;
  private controller!: Controller;
  private discovery!: ResourceDiscovery;
  private owners!: OwnerLookup;
  /** Keys waiting for a kind to be served; looked at again when discovery changes. */
  private readonly unresolved = new Set<string>();

  constructor(opts: GarbageCollectorOptions = {}) {
    this.opts = opts;
    this.log = (opts.logger ?? silentLogger()).child({ controller: GARBAGE_COLLECTOR });
  }

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.client = client;
    const events = new GraphEvents(this.graph, {
      enqueue: (uid) => this.enqueue(uid),
      requestDiscovery: () => this.requestDiscovery(),
    });
    const monitors = new Monitors(mgr.cache, events, this.log);
    this.discovery = new ResourceDiscovery(this.client, monitors, {
      intervalMs: this.opts.discoveryIntervalMs,
      ignoredResources: this.opts.ignoredResources,
      log: this.log,
      stopped: (m) => events.forget(m),
      changed: () => {
        for (const uid of this.unresolved) this.enqueue(uid);
        this.unresolved.clear();
      },
    });
    this.owners = new OwnerLookup(this.graph, monitors);
    this.controller = mgr.addController(
      {
        client,
        name: GARBAGE_COLLECTOR,
        reconciler: (req, ctx) => this.reconcile(req.name, ctx),
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_GC_WORKERS,
        // Published on the leader's Lease, so tools can tell these are handled.
        finalizers: [FINALIZER_ORPHAN, FINALIZER_FOREGROUND],
      },
      [],
    );
    mgr.add(this);
  }

  /** Discovers and monitors until `signal` aborts (the manager runs this, leader or not). */
  start(signal: AbortSignal): Promise<void> {
    return this.discovery.run(signal);
  }

  /** Readiness (the manager's /readyz): discovery ran and every monitor synced. */
  ready(): CheckResult {
    return this.discovery.ready();
  }

  /** Resolves once a discovery pass has run and every monitor has completed its first list. */
  synced(signal?: AbortSignal): Promise<void> {
    return this.discovery.synced(signal);
  }

  /** Asks for a discovery pass soon (debounced). */
  requestDiscovery(): void {
    this.discovery.request();
  }

  /** The client the collector writes through (for request counts). */
  get apiClient(): Client {
    return this.client;
  }

  private enqueue(uid: string): void {
    this.controller?.enqueue({ name: uid });
  }

  private async reconcile(uid: string, ctx: ReconcileContext): Promise<Result | undefined> {
    const node = this.graph.get(uid);
    if (!node) return undefined;
    if (node.deleting) return this.reconcileOwner(node, ctx);
    if (node.owners.length === 0) return undefined;
    const c = await classifyOwners(
      node,
      (group, kind) => this.discovery.servedKind(group, kind),
      (n, ref, served, ns, c) => this.owners.state(n, ref, served, ns, c),
      ctx,
    );
    switch (c.kind) {
      case "invalid":
        ctx.recorder.warning(objectOf(node), "OwnerRefInvalidNamespace", c.message);
        ctx.log.info({ reason: c.message }, "invalid owner reference; leaving the object alone");
        return undefined;
      case "unresolved":
        this.unresolved.add(uid);
        ctx.log.debug({ reason: c.reason }, "owner kind not served; waiting for discovery");
        return undefined;
      case "retry":
        return { requeueAfter: SYNC_RETRY_MS };
      case "classified":
        break;
    }
    const d = decideDependent(node, c, this.graph);
    switch (d.kind) {
      case "keep":
        return undefined;
      case "remove-references":
        await removeReferences(node, d.uids, ctx);
        return undefined;
      case "delete":
        if (d.unblockFirst) await unblockReferences(node, ctx);
        await deleteObject(node, d.policy, ctx);
        return undefined;
    }
  }

  /** An object being deleted: orphan or delete its dependents as its finalizers ask. */
  private async reconcileOwner(
    node: GraphNode,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    if (!isOrphaning(node) && !isDeletingDependents(node)) {
      return undefined; // being deleted: its removal will be seen
    }
    // Owner-side decisions need every monitor to have listed once.
    if (!this.discovery.monitorsSynced()) return { requeueAfter: SYNC_RETRY_MS };
    const d = decideOwner(node, this.graph);
    switch (d.kind) {
      case "none":
        return undefined;
      case "orphan": {
        const concurrency = this.opts.orphanConcurrency ?? DEFAULT_ORPHAN_CONCURRENCY;
        await orphanDependents(node, d.dependents, concurrency, ctx);
        ctx.log.info({ dependents: d.dependents.length }, "orphaned dependents");
        await removeFinalizer(node, FINALIZER_ORPHAN, ctx);
        return undefined;
      }
      case "remove-finalizer":
        await removeFinalizer(node, d.finalizer, ctx);
        return undefined;
      case "wait-for":
        // Dependents were enqueued when this object started waiting; make sure the
        // blocking ones are on their way (e.g. after a restart of the collector).
        for (const dep of d.blocking) if (!dep.deleting) this.enqueue(dep.uid);
        return undefined;
    }
  }
}
