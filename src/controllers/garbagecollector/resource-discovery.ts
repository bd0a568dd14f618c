/**
 * Which kinds the garbage collector follows: discovery of every served kind (at
 * start, every `discoveryIntervalMs`, and soon after a CustomResourceDefinition
 * changes), and a monitor (monitors.ts) for each kind that can be listed, watched
 * and deleted, minus the ignored ones. Kinds that stop being served lose theirs;
 * a group whose discovery failed keeps its monitors until it answers again.
 */
import {
  type CheckResult,
  type Client,
  groupResource,
  type Logger,
  parseGroupVersion,
  preferredResources,
  type ServedResource,
  type ServerResources,
} from "@setpoint/runtime";
import { groupKind, type Monitor, type Monitors } from "./monitors.ts";

/** How often the served kinds are discovered again, in ms (Kubernetes resyncs every 30 s). */
export const DEFAULT_DISCOVERY_INTERVAL_MS = 30_000;
/** After a CRD changes, discovery runs again this soon (ms), once per burst of changes. */
export const DISCOVERY_DEBOUNCE_MS = 250;
/** Resources never monitored: Events (Kubernetes' collector ignores them too). */
export const DEFAULT_IGNORED_RESOURCES: readonly string[] = ["events", "events.events.k8s.io"];

export interface ResourceDiscoveryOptions {
  /** Re-discovery period in ms (default DEFAULT_DISCOVERY_INTERVAL_MS). */
  intervalMs?: number;
  /** Resources ("configmaps", "widgets.example.com") not to monitor. */
  ignoredResources?: readonly string[];
  log: Logger;
  /** A monitor was stopped for good (its kind is no longer served): forget its objects. */
  stopped(monitor: Monitor): void;
  /** The set of monitored resources changed (keys waiting for a kind may now resolve). */
  changed(): void;
}

/** Whether the collector can follow a resource: it must list, watch and delete it. */
export function monitorable(r: ServedResource): boolean {
  return r.verbs.includes("list") && r.verbs.includes("watch") && r.verbs.includes("delete");
}

export class ResourceDiscovery {
  /** Every served kind by "group/Kind", for scope and version of owners. */
  private served = new Map<string, ServedResource>();
  private discovered = false;
  private readonly ignored: Set<string>;
  private debounce: ReturnType<typeof setTimeout> | undefined;
  private wake: (() => void) | undefined;
  private requested = false;
  private readonly waiters: (() => void)[] = [];

  constructor(
    private readonly client: Client,
    readonly monitors: Monitors,
    private readonly opts: ResourceDiscoveryOptions,
  ) {
    this.ignored = new Set(opts.ignoredResources ?? DEFAULT_IGNORED_RESOURCES);
  }

  /** The served resource of a kind (any version), if it is served. */
  servedKind(group: string, kind: string): ServedResource | undefined {
    return this.served.get(groupKind(group, kind));
  }

  /** Readiness: discovery ran and every monitor synced. */
  ready(): CheckResult {
    if (!this.discovered) return { ok: false, reason: "resources not discovered yet" };
    const pending = this.monitors.unsynced();
    return pending.length === 0
      ? { ok: true }
      : { ok: false, reason: `monitors not synced: ${pending.join(", ")}` };
  }

  /** Whether discovery ran and every monitor has listed once. */
  monitorsSynced(): boolean {
    return this.discovered && this.monitors.unsynced().length === 0;
  }

  /** Resolves once a discovery pass has run and every monitor has completed its first list. */
  async synced(signal?: AbortSignal): Promise<void> {
    while (!this.discovered) {
      await new Promise<void>((r) => this.waiters.push(r));
      if (signal?.aborted) return;
    }
    await Promise.all(this.monitors.all().map((m) => m.informer.waitForSync(signal)));
  }

  /** Asks for a discovery pass soon (debounced). */
  request(): void {
    if (this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.requested = true;
      this.wake?.();
    }, DISCOVERY_DEBOUNCE_MS);
    this.debounce.unref?.();
  }

  /** Discovers and monitors until `signal` aborts; then stops every monitor. */
  async run(signal: AbortSignal): Promise<void> {
    const interval = this.opts.intervalMs ?? DEFAULT_DISCOVERY_INTERVAL_MS;
    while (!signal.aborted) {
      await this.discover(signal);
      await this.nextPass(interval, signal);
    }
    if (this.debounce) clearTimeout(this.debounce);
    this.monitors.stopAll();
    for (const w of this.waiters.splice(0)) w();
  }

  private nextPass(ms: number, signal: AbortSignal): Promise<void> {
    if (this.requested || signal.aborted) {
      this.requested = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.wake = undefined;
        this.requested = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private async discover(signal: AbortSignal): Promise<void> {
    const log = this.opts.log;
    let result: ServerResources;
    try {
      result = await this.client.serverResources({ signal });
    } catch (e) {
      if (!signal.aborted) {
        log.warn({ err: e instanceof Error ? e.message : String(e) }, "discovery failed");
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
      log.warn(
        { groups: Object.fromEntries(result.failed) },
        "discovery failed for some groups; keeping their monitors",
      );
    }
    const { started, stopped } = this.monitors.apply(wanted, keep, signal);
    const restarted = new Set(started.map((m) => m.key));
    for (const m of stopped) {
      if (restarted.has(m.key)) continue; // a new version: pruned once the new monitor syncs
      this.opts.stopped(m);
    }
    if (started.length > 0 || stopped.length > 0) {
      log.info(
        {
          started: started.map((m) => m.key),
          stopped: stopped.map((m) => m.key),
          monitors: this.monitors.all().length,
        },
        "monitored resources changed",
      );
      this.opts.changed();
    }
    if (!this.discovered) {
      this.discovered = true;
      for (const w of this.waiters.splice(0)) w();
    }
  }
}
