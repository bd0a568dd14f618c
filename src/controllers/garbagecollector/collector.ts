/**
 * The garbage collector: deletes objects whose owners are gone, and carries out
 * the Foreground and Orphan deletion policies, as an ordinary controller of the
 * API (no storage access).
 *
 * - Discovery (at start, every `discoveryIntervalMs`, and soon after any change
 *   to a CustomResourceDefinition) lists every served kind; each kind that can
 *   be listed, watched and deleted gets a metadata-only informer (a monitor) in
 *   the manager's shared cache, feeding the ownership graph. Kinds that stop
 *   being served lose theirs. Discovery and monitors run as a manager runnable:
 *   leader or not (a standby keeps its graph warm), stopped on shutdown, and
 *   ready (in /readyz) once discovery ran and every monitor synced.
 * - The graph is the collector's only source of truth about existence: "is
 *   owner UID X still there" is a lookup, never a GET per dependent. An owner
 *   absent from the graph counts as gone once its kind's monitor has seen the
 *   store at least up to the dependent's own resourceVersion (storage revisions
 *   are global), so a fresh dependent of a fresh owner is never mistaken for an
 *   orphan; only when that cannot be told (the owner's kind had no activity since)
 *   is the owner read once, and an absent answer remembered by UID.
 * - Level-triggered: keys are object UIDs; a monitor's initial list enqueues
 *   every object whose owners are not all present, so a collector that was down
 *   while owners were deleted catches up when it starts.
 *
 * Per key (an object):
 * - being deleted with `orphan`: every dependent loses its reference to it (a
 *   JSON patch that tests the dependent's UID and the reference's position),
 *   then the finalizer is removed;
 * - being deleted with `foregroundDeletion`: its dependents are deleted (those
 *   with dependents of their own in foreground too); once no dependent with
 *   `blockOwnerDeletion` is left, the finalizer is removed;
 * - otherwise, its owner references are classified: an owner that exists (same
 *   UID, name, kind and namespace) is solid; one that is gone, or whose name now
 *   belongs to another UID, is dangling; one being deleted in foreground is
 *   waiting. With a solid owner, dangling and waiting references are removed;
 *   without one, the object is deleted (one DELETE with preconditions on its
 *   UID and resourceVersion; Foreground when an owner waits and it has
 *   dependents).
 * - Invalid references (a cluster-scoped object naming a namespaced owner) are
 *   reported with a Warning Event (OwnerRefInvalidNamespace) and the object is
 *   left alone. A namespaced owner is always looked up in the dependent's
 *   namespace, as in Kubernetes; a reference whose UID belongs to an object in
 *   another namespace is reported the same way and counts as absent there.
 */
import type { KubeObject, OwnerReference } from "@setpoint/api";
import {
  type CheckResult,
  type Client,
  type Controller,
  compareResourceVersions,
  groupResource,
  isConflict,
  isInvalid,
  isNotFound,
  type Logger,
  type Manager,
  mapLimit,
  parseGroupVersion,
  preferredResources,
  type ReconcileContext,
  type Result,
  type Runnable,
  type ServedResource,
  type ServerResources,
  silentLogger,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import {
  FINALIZER_FOREGROUND,
  FINALIZER_ORPHAN,
  Graph,
  type GraphNode,
  isDeletingDependents,
  isOrphaning,
  referenceTo,
  sameOwners,
} from "./graph.ts";
import { groupKind, type Monitor, Monitors } from "./monitors.ts";

/** The controller's name (what `--disable` takes). */
export const GARBAGE_COLLECTOR = "garbage-collector";
/** Concurrent reconciles (Kubernetes' --concurrent-gc-syncs default). */
export const DEFAULT_GC_WORKERS = 20;
/** How often the served kinds are discovered again, in ms (Kubernetes resyncs every 30 s). */
export const DEFAULT_DISCOVERY_INTERVAL_MS = 30_000;
/** After a CRD changes, discovery runs again this soon (ms), once per burst of changes. */
export const DISCOVERY_DEBOUNCE_MS = 250;
/** Resources never monitored: Events (Kubernetes' collector ignores them too). */
export const DEFAULT_IGNORED_RESOURCES: readonly string[] = ["events", "events.events.k8s.io"];
/** UIDs of owners verified absent with a read, remembered (least recently added dropped first). */
export const ABSENT_OWNER_CACHE_SIZE = 8192;
/** Dependents patched at once while orphaning. */
export const DEFAULT_ORPHAN_CONCURRENCY = 16;
/** Longest a reconcile waits for an owner's monitor to sync before looking again later (ms). */
export const MONITOR_SYNC_WAIT_MS = 5_000;
/** Delay before looking again at a key that waits for monitors to sync (ms). */
export const SYNC_RETRY_MS = 200;

const CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io";

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

type Policy = "Orphan" | "Foreground" | "Background";

type Classification =
  | { kind: "invalid"; message: string }
  | { kind: "unresolved"; reason: string }
  | { kind: "retry" }
  | {
      kind: "classified";
      solid: OwnerReference[];
      dangling: OwnerReference[];
      waiting: OwnerReference[];
    };

interface JsonPatchOp {
  op: "test" | "remove" | "replace";
  path: string;
  value?: unknown;
}

function typeOfNode(n: GraphNode): { apiVersion: string; kind: string } {
  return { apiVersion: n.apiVersion, kind: n.kind };
}

function describeRef(ref: OwnerReference, namespace: string): string {
  return `[${ref.apiVersion}/${ref.kind}, namespace: ${namespace}, name: ${ref.name}, uid: ${ref.uid}]`;
}

function objectOf(n: GraphNode): KubeObject {
  const metadata: KubeObject["metadata"] = { name: n.name, uid: n.uid };
  if (n.namespace) metadata.namespace = n.namespace;
  return { apiVersion: n.apiVersion, kind: n.kind, metadata };
}

/** The policy to delete `n` with: the one its own finalizers ask for, else Background. */
function policyOf(n: GraphNode): Policy {
  if (n.finalizers.includes(FINALIZER_ORPHAN)) return "Orphan";
  if (n.finalizers.includes(FINALIZER_FOREGROUND)) return "Foreground";
  return "Background";
}

function monitorable(r: ServedResource): boolean {
  return r.verbs.includes("list") && r.verbs.includes("watch") && r.verbs.includes("delete");
}

export class GarbageCollector implements BuiltinController, Runnable {
  readonly name = GARBAGE_COLLECTOR;
  readonly graph = new Graph();
  private readonly opts: GarbageCollectorOptions;
  private readonly log: Logger;
  private readonly ignored: Set<string>;
  private client!: Client;
  private controller!: Controller;
  private monitors!: Monitors;
  /** Every served kind by "group/Kind", for scope and version of owners. */
  private served = new Map<string, ServedResource>();
  private discovered = false;
  /** Keys waiting for a kind to be served; looked at again when discovery changes. */
  private readonly unresolved = new Set<string>();
  private readonly absentOwners = new Map<string, true>();
  private debounce: ReturnType<typeof setTimeout> | undefined;
  private wakeDiscovery: (() => void) | undefined;
  private discoveryRequested = false;
  private readonly discoveryWaiters: (() => void)[] = [];

  constructor(opts: GarbageCollectorOptions = {}) {
    this.opts = opts;
    this.log = (opts.logger ?? silentLogger()).child({ controller: GARBAGE_COLLECTOR });
    this.ignored = new Set(opts.ignoredResources ?? DEFAULT_IGNORED_RESOURCES);
  }

  setup(mgr: Manager): void {
    this.client = mgr.client;
    this.monitors = new Monitors(
      mgr.cache,
      {
        added: (n) => this.upserted(n),
        updated: (n) => this.upserted(n),
        deleted: (n) => this.deleted(n),
        synced: (m) => this.monitorSynced(m),
      },
      this.log,
    );
    this.controller = mgr.addController(
      {
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
    return this.run(signal);
  }

  /** Readiness (the manager's /readyz): discovery ran and every monitor synced. */
  ready(): CheckResult {
    if (!this.discovered) return { ok: false, reason: "resources not discovered yet" };
    const pending = this.monitors.unsynced();
    return pending.length === 0
      ? { ok: true }
      : { ok: false, reason: `monitors not synced: ${pending.join(", ")}` };
  }

  /** Resolves once a discovery pass has run and every monitor has completed its first list. */
  async synced(signal?: AbortSignal): Promise<void> {
    while (!this.discovered) {
      await new Promise<void>((r) => this.discoveryWaiters.push(r));
      if (signal?.aborted) return;
    }
    await Promise.all(this.monitors.all().map((m) => m.informer.waitForSync(signal)));
  }

  /** Asks for a discovery pass soon (debounced). */
  requestDiscovery(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.discoveryRequested = true;
      this.wakeDiscovery?.();
    }, DISCOVERY_DEBOUNCE_MS);
    this.debounce.unref?.();
  }

  // ---- discovery and monitors ----

  private async run(signal: AbortSignal): Promise<void> {
    const interval = this.opts.discoveryIntervalMs ?? DEFAULT_DISCOVERY_INTERVAL_MS;
    while (!signal.aborted) {
      await this.discover(signal);
      await this.nextPass(interval, signal);
    }
    if (this.debounce) clearTimeout(this.debounce);
    this.monitors.stopAll();
    for (const w of this.discoveryWaiters.splice(0)) w();
  }

  private nextPass(ms: number, signal: AbortSignal): Promise<void> {
    if (this.discoveryRequested || signal.aborted) {
      this.discoveryRequested = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.wakeDiscovery = undefined;
        this.discoveryRequested = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeDiscovery = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private async discover(signal: AbortSignal): Promise<void> {
    let result: ServerResources;
    try {
      result = await this.client.serverResources({ signal });
    } catch (e) {
      if (!signal.aborted) {
        this.log.warn({ err: e instanceof Error ? e.message : String(e) }, "discovery failed");
      }
      return;
    }
    if (signal.aborted) return;
    const resources = preferredResources(result.resources);
    this.served = new Map(resources.map((r) => [groupKind(r.group, r.kind), r]));
    const wanted = resources.filter((r) => monitorable(r) && !this.ignored.has(groupResource(r)));
    const failedGroups = new Set(
      [...result.failed.keys()].map((gv) => parseGroupVersion(gv)?.group ?? gv),
    );
    const keep = new Set(
      this.monitors
        .all()
        .filter((m) => failedGroups.has(m.resource.group))
        .map((m) => m.key),
    );
    if (result.failed.size > 0) {
      this.log.warn(
        { groups: Object.fromEntries(result.failed) },
        "discovery failed for some groups; keeping their monitors",
      );
    }
    const { started, stopped } = this.monitors.apply(wanted, keep, signal);
    const restarted = new Set(started.map((m) => m.key));
    for (const m of stopped) {
      if (restarted.has(m.key)) continue; // a new version: pruned once the new monitor syncs
      for (const uid of this.graph.uidsOf(m.key)) this.removeNode(uid);
    }
    if (started.length > 0 || stopped.length > 0) {
      this.log.info(
        {
          started: started.map((m) => m.key),
          stopped: stopped.map((m) => m.key),
          monitors: this.monitors.all().length,
        },
        "monitored resources changed",
      );
      for (const uid of this.unresolved) this.enqueue(uid);
      this.unresolved.clear();
    }
    if (!this.discovered) {
      this.discovered = true;
      for (const w of this.discoveryWaiters.splice(0)) w();
    }
  }

  // ---- graph maintenance (informer handlers: record and enqueue only) ----

  private upserted(node: GraphNode): void {
    if (!node.uid) return;
    // Initial-list CRDs too: one created between a discovery pass and the first list of
    // the CRD monitor arrives as "initial" yet was never discovered (one debounced pass).
    if (node.resource === CRD_RESOURCE) this.requestDiscovery();
    const old = this.graph.upsert(node);
    // As a dependent: look at it when an owner may be gone or waiting.
    if (node.owners.length > 0 && !node.deleting) {
      const changed = !old || !sameOwners(old.owners, node.owners) || old.deleting;
      if (changed && this.needsAttention(node)) this.enqueue(node.uid);
    }
    // As an owner: orphan or delete dependents.
    if (isOrphaning(node)) this.enqueue(node.uid);
    if (isDeletingDependents(node)) {
      this.enqueue(node.uid);
      if (!old || !isDeletingDependents(old)) {
        for (const dep of this.graph.dependentsOf(node.uid)) {
          if (!dep.deleting) this.enqueue(dep.uid);
        }
      }
    }
    // References dropped or unblocked: an owner waiting on this object may be done.
    if (old) {
      for (const ref of old.owners) {
        const now = referenceTo(node, ref.uid);
        if (!now || (ref.blockOwnerDeletion === true && now.blockOwnerDeletion !== true)) {
          this.enqueueIfDeletingDependents(ref.uid);
        }
      }
    }
  }

  private deleted(node: GraphNode): void {
    if (node.resource === CRD_RESOURCE) this.requestDiscovery();
    const held = this.graph.get(node.uid);
    if (held && held.resource === node.resource) this.removeNode(node.uid);
  }

  private removeNode(uid: string): void {
    const old = this.graph.remove(uid);
    if (!old) return;
    for (const dep of this.graph.dependentsOf(uid)) this.enqueue(dep.uid);
    for (const ref of old.owners) this.enqueueIfDeletingDependents(ref.uid);
  }

  /** Drops nodes of a (re)started monitor's resource that its first list did not hold. */
  private monitorSynced(m: Monitor): void {
    for (const uid of this.graph.uidsOf(m.key)) {
      const n = this.graph.get(uid);
      if (!n) continue;
      const held = m.informer.get(n.name, n.namespace || undefined);
      if (held?.metadata.uid !== uid) this.removeNode(uid);
    }
  }

  /** Whether some owner of `node` is not present and live in the graph. */
  private needsAttention(node: GraphNode): boolean {
    for (const ref of node.owners) {
      const owner = this.graph.get(ref.uid);
      if (!owner || owner.deleting || owner.name !== ref.name || owner.kind !== ref.kind) {
        return true;
      }
      // A namespaced owner must live in the dependent's namespace.
      if (owner.namespace !== "" && owner.namespace !== node.namespace) return true;
    }
    return false;
  }

  private enqueueIfDeletingDependents(uid: string): void {
    const owner = this.graph.get(uid);
    if (owner && isDeletingDependents(owner)) this.enqueue(uid);
  }

  private enqueue(uid: string): void {
    this.controller?.enqueue({ name: uid });
  }

  // ---- reconcile ----

  private async reconcile(uid: string, ctx: ReconcileContext): Promise<Result | undefined> {
    const node = this.graph.get(uid);
    if (!node) return undefined;
    if (node.deleting) {
      if (isOrphaning(node)) return this.orphanDependents(node, ctx);
      if (isDeletingDependents(node)) return this.deleteDependents(node, ctx);
      return undefined; // being deleted: its removal will be seen
    }
    if (node.owners.length === 0) return undefined;
    const c = await this.classify(node, ctx);
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
    const { solid, dangling, waiting } = c;
    if (solid.length > 0) {
      if (dangling.length > 0 || waiting.length > 0) {
        const uids = new Set([...dangling, ...waiting].map((r) => r.uid));
        await this.removeReferences(node, uids, ctx);
      }
      return undefined;
    }
    if (waiting.length > 0 && this.graph.hasDependents(uid)) {
      // Break cycles: when one of our dependents itself waits on its dependents, it
      // must not block on us.
      const deps = this.graph.dependentsOf(uid);
      if (deps.some(isDeletingDependents)) await this.unblockReferences(node, ctx);
      await this.deleteNode(node, "Foreground", ctx);
      return undefined;
    }
    await this.deleteNode(node, policyOf(node), ctx);
    return undefined;
  }

  private async classify(node: GraphNode, ctx: ReconcileContext): Promise<Classification> {
    const solid: OwnerReference[] = [];
    const dangling: OwnerReference[] = [];
    const waiting: OwnerReference[] = [];
    for (const ref of node.owners) {
      const gv = parseGroupVersion(ref.apiVersion ?? "");
      if (!gv) return { kind: "unresolved", reason: `apiVersion ${ref.apiVersion} does not parse` };
      const served = this.served.get(groupKind(gv.group, ref.kind));
      if (!served)
        return { kind: "unresolved", reason: `${ref.kind} in ${ref.apiVersion} is not served` };
      if (!node.namespace && served.namespaced) {
        return {
          kind: "invalid",
          message: `ownerRef ${describeRef(ref, "")} does not exist in namespace "": a cluster-scoped object cannot have a namespaced owner`,
        };
      }
      const ns = served.namespaced ? node.namespace : "";
      const state = await this.ownerState(node, ref, served, ns, ctx);
      if (state === "retry") return { kind: "retry" };
      if (state === "solid") solid.push(ref);
      else if (state === "waiting") waiting.push(ref);
      else dangling.push(ref);
    }
    return { kind: "classified", solid, dangling, waiting };
  }

  /** Whether the owner `ref` names exists (solid), waits on its dependents, or is gone. */
  private async ownerState(
    node: GraphNode,
    ref: OwnerReference,
    served: ServedResource,
    ns: string,
    ctx: ReconcileContext,
  ): Promise<"solid" | "waiting" | "dangling" | "retry"> {
    let owner = this.graph.get(ref.uid);
    if (!owner && !this.absentOwners.has(ref.uid)) {
      const monitor = this.monitors.forKind(served.group, served.kind);
      if (monitor && !monitor.informer.hasSynced()) {
        const bound = AbortSignal.any([ctx.signal, AbortSignal.timeout(MONITOR_SYNC_WAIT_MS)]);
        try {
          await monitor.informer.waitForSync(bound);
        } catch {
          return "retry";
        }
        owner = this.graph.get(ref.uid);
      }
      if (!owner) {
        const seenUpTo = monitor?.informer.resourceVersion ?? "";
        const caughtUp = (compareResourceVersions(seenUpTo, node.resourceVersion) ?? -1) >= 0;
        if (!caughtUp) return this.verifyOwner(ref, served, ns, ctx);
      }
    }
    if (!owner) return "dangling";
    if (owner.group !== served.group || owner.kind !== ref.kind || owner.name !== ref.name) {
      return "dangling"; // the UID belongs to another object: this owner does not exist
    }
    if (owner.namespace !== ns) {
      ctx.recorder.warning(
        objectOf(node),
        "OwnerRefInvalidNamespace",
        `ownerRef ${describeRef(ref, ns)} does not exist in namespace "${ns}"`,
      );
      return "dangling";
    }
    return isDeletingDependents(owner) ? "waiting" : "solid";
  }

  /** Reads an owner the monitors cannot vouch for (its kind saw no change since the dependent's). */
  private async verifyOwner(
    ref: OwnerReference,
    served: ServedResource,
    ns: string,
    ctx: ReconcileContext,
  ): Promise<"solid" | "waiting" | "dangling"> {
    try {
      const live = await ctx.client.get<KubeObject>(
        { apiVersion: served.apiVersion, kind: served.kind },
        ref.name,
        ns || undefined,
        { metadataOnly: true },
      );
      if (live.metadata.uid === ref.uid) {
        const deletingDependents =
          Boolean(live.metadata.deletionTimestamp) &&
          (live.metadata.finalizers ?? []).includes(FINALIZER_FOREGROUND);
        return deletingDependents ? "waiting" : "solid";
      }
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    this.rememberAbsent(ref.uid);
    return "dangling";
  }

  private rememberAbsent(uid: string): void {
    this.absentOwners.set(uid, true);
    if (this.absentOwners.size > ABSENT_OWNER_CACHE_SIZE) {
      const first = this.absentOwners.keys().next().value;
      if (first !== undefined) this.absentOwners.delete(first);
    }
  }

  /** Whether owner-side decisions may be taken: every monitor has listed once. */
  private monitorsSynced(): boolean {
    return this.discovered && this.monitors.unsynced().length === 0;
  }

  private async orphanDependents(
    node: GraphNode,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    if (!this.monitorsSynced()) return { requeueAfter: SYNC_RETRY_MS };
    const deps = this.graph.dependentsOf(node.uid);
    await mapLimit(deps, this.opts.orphanConcurrency ?? DEFAULT_ORPHAN_CONCURRENCY, (dep) =>
      this.removeReferences(dep, new Set([node.uid]), ctx),
    );
    ctx.log.info({ dependents: deps.length }, "orphaned dependents");
    await this.removeFinalizer(node, FINALIZER_ORPHAN, ctx);
    return undefined;
  }

  private async deleteDependents(
    node: GraphNode,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    if (!this.monitorsSynced()) return { requeueAfter: SYNC_RETRY_MS };
    const deps = this.graph.dependentsOf(node.uid);
    const blocking = deps.filter((d) => referenceTo(d, node.uid)?.blockOwnerDeletion === true);
    if (blocking.length === 0) {
      await this.removeFinalizer(node, FINALIZER_FOREGROUND, ctx);
      return undefined;
    }
    // Dependents were enqueued when this object started waiting; make sure the
    // blocking ones are on their way (e.g. after a restart of the collector).
    for (const d of blocking) if (!d.deleting) this.enqueue(d.uid);
    return undefined;
  }

  // ---- writes ----

  private async deleteNode(node: GraphNode, policy: Policy, ctx: ReconcileContext): Promise<void> {
    const type = typeOfNode(node);
    const ns = node.namespace || undefined;
    try {
      await ctx.client.delete(type, node.name, ns, {
        propagationPolicy: policy,
        preconditions: { uid: node.uid, resourceVersion: node.resourceVersion },
      });
      ctx.log.debug({ policy }, "deleted object whose owners are gone");
      return;
    } catch (e) {
      if (isNotFound(e)) return;
      if (!isConflict(e)) throw e;
    }
    // Changed since the monitor saw it (or replaced by a new object of that name):
    // read it once and delete only if its owners are still the ones judged gone.
    let live: KubeObject;
    try {
      live = await ctx.client.get<KubeObject>(type, node.name, ns, { metadataOnly: true });
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    if (live.metadata.uid !== node.uid) return;
    if (!sameOwners(live.metadata.ownerReferences, node.owners)) return; // its update is on its way
    try {
      await ctx.client.delete(type, node.name, ns, {
        propagationPolicy: policy,
        preconditions: { uid: node.uid },
      });
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }

  /** Removes the references to `uids` from `node` (a JSON patch that tests what it removes). */
  private async removeReferences(
    node: GraphNode,
    uids: ReadonlySet<string>,
    ctx: ReconcileContext,
  ): Promise<void> {
    const ops: JsonPatchOp[] = [{ op: "test", path: "/metadata/uid", value: node.uid }];
    for (let i = node.owners.length - 1; i >= 0; i--) {
      if (!uids.has(node.owners[i].uid)) continue;
      ops.push(
        { op: "test", path: `/metadata/ownerReferences/${i}/uid`, value: node.owners[i].uid },
        { op: "remove", path: `/metadata/ownerReferences/${i}` },
      );
    }
    if (ops.length === 1) return;
    await this.jsonPatch(node, ops, ctx);
  }

  /** Sets blockOwnerDeletion to false on every reference of `node` that has it. */
  private async unblockReferences(node: GraphNode, ctx: ReconcileContext): Promise<void> {
    const ops: JsonPatchOp[] = [{ op: "test", path: "/metadata/uid", value: node.uid }];
    node.owners.forEach((r, i) => {
      if (r.blockOwnerDeletion !== true) return;
      ops.push(
        { op: "test", path: `/metadata/ownerReferences/${i}/uid`, value: r.uid },
        { op: "replace", path: `/metadata/ownerReferences/${i}/blockOwnerDeletion`, value: false },
      );
    });
    if (ops.length > 1) await this.jsonPatch(node, ops, ctx);
  }

  private async removeFinalizer(
    node: GraphNode,
    finalizer: string,
    ctx: ReconcileContext,
  ): Promise<void> {
    const i = node.finalizers.indexOf(finalizer);
    if (i < 0) return;
    await this.jsonPatch(
      node,
      [
        { op: "test", path: "/metadata/uid", value: node.uid },
        { op: "test", path: `/metadata/finalizers/${i}`, value: finalizer },
        { op: "remove", path: `/metadata/finalizers/${i}` },
      ],
      ctx,
    );
    ctx.log.info({ finalizer }, "removed finalizer");
  }

  /**
   * Sends a JSON patch built from the monitor's copy. A failed test (422) means the
   * copy is stale: the error retries the key with backoff, by which time the
   * monitor has the object's new state. A vanished object needs nothing.
   */
  private async jsonPatch(
    node: GraphNode,
    ops: JsonPatchOp[],
    ctx: ReconcileContext,
  ): Promise<void> {
    try {
      await ctx.client.patch(typeOfNode(node), node.name, node.namespace || undefined, ops, {
        type: "json",
      });
    } catch (e) {
      if (isNotFound(e)) return;
      if (isInvalid(e) || isConflict(e)) {
        throw new Error(`${node.kind} ${node.name} changed since it was read; looking again`, {
          cause: e,
        });
      }
      throw e;
    }
  }

  /** The client the collector writes through (for request counts). */
  get apiClient(): Client {
    return this.client;
  }
}
