/**
 * One metadata-only informer per monitored resource, in the manager's shared
 * cache (which starts, stops and health-checks it), added and removed as
 * discovery finds resources served or gone. Objects are reduced to what the
 * graph needs (identity, ownerReferences, finalizers, deletionTimestamp), so a
 * monitor costs little memory per object, and every change reaches the sink.
 */
import type { KubeObject, ObjectMeta } from "@setpoint/api";
import {
  groupResource,
  type Informer,
  type InformerCache,
  type InformerScope,
  type Logger,
  type ServedResource,
} from "@setpoint/runtime";
import type { GraphNode } from "./graph.ts";

/** "group/Kind": how a kind is named across versions. */
export function groupKind(group: string, kind: string): string {
  return `${group}/${kind}`;
}

/** One monitored resource. */
export interface Monitor {
  readonly key: string;
  readonly resource: ServedResource;
  readonly informer: Informer<KubeObject>;
  /** Removes the monitor's handler from the informer. */
  readonly detach: () => void;
  /** When it was started (ms since the epoch). */
  readonly startedAt: number;
}

/** Receives every change the monitors see. */
export interface MonitorSink {
  added(node: GraphNode, initial: boolean): void;
  updated(node: GraphNode): void;
  deleted(node: GraphNode): void;
  /** A monitor completed its first list. */
  synced(monitor: Monitor): void;
}

/** The metadata the collector keeps of an object. */
export function reduceToMetadata(o: KubeObject): KubeObject {
  const m = o.metadata ?? {};
  const meta: ObjectMeta = { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion };
  if (m.namespace) meta.namespace = m.namespace;
  if (m.ownerReferences?.length) meta.ownerReferences = m.ownerReferences;
  if (m.finalizers?.length) meta.finalizers = m.finalizers;
  if (m.deletionTimestamp) meta.deletionTimestamp = m.deletionTimestamp;
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: meta };
}

/** The cache scope of monitors: metadata only, reduced by `reduceToMetadata`. */
export const MONITOR_SCOPE: InformerScope = { metadataOnly: true, transform: reduceToMetadata };

/** The graph node of an object read from `resource`'s monitor. */
export function toNode(o: KubeObject, resource: ServedResource): GraphNode {
  const m = o.metadata;
  return {
    uid: m.uid ?? "",
    apiVersion: resource.apiVersion,
    group: resource.group,
    kind: resource.kind,
    namespace: m.namespace ?? "",
    name: m.name ?? "",
    resourceVersion: m.resourceVersion ?? "",
    owners: m.ownerReferences ?? [],
    deleting: Boolean(m.deletionTimestamp),
    finalizers: m.finalizers ?? [],
    resource: groupResource(resource),
  };
}

export class Monitors {
  private readonly byResource = new Map<string, Monitor>();
  private readonly byKind = new Map<string, Monitor>();

  constructor(
    private readonly cache: InformerCache,
    private readonly sink: MonitorSink,
    private readonly log: Logger,
  ) {}

  /** The monitor of a kind (any version), if it is monitored. */
  forKind(group: string, kind: string): Monitor | undefined {
    return this.byKind.get(groupKind(group, kind));
  }

  /** The monitor of a resource key ("configmaps", "widgets.example.com"). */
  get(key: string): Monitor | undefined {
    return this.byResource.get(key);
  }

  all(): Monitor[] {
    return [...this.byResource.values()];
  }

  /** Keys of the monitors that have not completed their first list. */
  unsynced(): string[] {
    return this.all()
      .filter((m) => !m.informer.hasSynced())
      .map((m) => m.key);
  }

  /**
   * Makes the monitors match `wanted`: starts new ones (and ones whose version
   * changed), stops those no longer wanted unless their key is in `keep` (a
   * group whose discovery failed this time). Returns what changed.
   */
  apply(
    wanted: ServedResource[],
    keep: ReadonlySet<string>,
    signal: AbortSignal,
  ): { started: Monitor[]; stopped: Monitor[] } {
    const started: Monitor[] = [];
    const stopped: Monitor[] = [];
    const want = new Map(wanted.map((r) => [groupResource(r), r]));
    for (const [key, m] of this.byResource) {
      const w = want.get(key);
      if (w && w.apiVersion === m.resource.apiVersion && w.kind === m.resource.kind) continue;
      if (!w && keep.has(key)) continue;
      this.stop(m);
      stopped.push(m);
    }
    for (const [key, r] of want) {
      if (this.byResource.has(key)) continue;
      if (signal.aborted) break;
      started.push(this.start(key, r));
    }
    return { started, stopped };
  }

  /** Stops every monitor. */
  stopAll(): void {
    for (const m of this.all()) this.stop(m);
  }

  private start(key: string, resource: ServedResource): Monitor {
    const type = { apiVersion: resource.apiVersion, kind: resource.kind };
    const informer = this.cache.informerFor<KubeObject>(type, MONITOR_SCOPE);
    const detach = informer.addEventHandler({
      onAdd: (o, initial) => this.sink.added(toNode(o, resource), initial),
      onUpdate: (_old, o, resync) => {
        if (!resync) this.sink.updated(toNode(o, resource));
      },
      onDelete: (o) => this.sink.deleted(toNode(o, resource)),
    });
    const monitor: Monitor = { key, resource, informer, detach, startedAt: Date.now() };
    this.byResource.set(key, monitor);
    this.byKind.set(groupKind(resource.group, resource.kind), monitor);
    // Rejects when the informer is removed before it synced.
    informer.waitForSync().then(
      () => {
        if (this.byResource.get(key) === monitor) this.sink.synced(monitor);
      },
      () => undefined,
    );
    this.log.debug({ resource: key, apiVersion: resource.apiVersion }, "monitoring resource");
    return monitor;
  }

  private stop(m: Monitor): void {
    m.detach();
    this.cache.removeInformer(
      { apiVersion: m.resource.apiVersion, kind: m.resource.kind },
      MONITOR_SCOPE,
    );
    if (this.byResource.get(m.key) === m) this.byResource.delete(m.key);
    const gk = groupKind(m.resource.group, m.resource.kind);
    if (this.byKind.get(gk) === m) this.byKind.delete(gk);
    this.log.debug({ resource: m.key }, "stopped monitoring resource");
  }
}
