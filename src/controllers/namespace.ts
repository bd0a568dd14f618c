/**
 * The namespace controller: empties a namespace that is being deleted, then
 * lets it go.
 *
 * For a Namespace with a deletionTimestamp whose `spec.finalizers` still holds
 * `kubernetes`, each pass:
 * 1. discovers every served namespaced kind that can be deleted (built-in and
 *    custom resources alike);
 * 2. deletes the namespace's objects of each kind: one deletecollection where the
 *    kind supports it, else a list and one DELETE per object (Background
 *    propagation, so the garbage collector takes care of dependents);
 * 3. lists what remains (objects waiting on finalizers) and reports it in the
 *    namespace's status conditions, with Kubernetes' types, reasons and messages:
 *    NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersionParsingFailure,
 *    NamespaceDeletionContentFailure, NamespaceContentRemaining,
 *    NamespaceFinalizersRemaining (written only when they change);
 * 4. while content remains, looks again after a delay that doubles per pass
 *    (bounded); on failures, retries with the runtime's backoff; once nothing
 *    remains, finalizes: `PUT /api/v1/namespaces/<name>/finalize` with
 *    `spec.finalizers` without `kubernetes`, and the server removes the namespace.
 */

import type { Condition, KubeObject } from "@setpoint/api";
import { deepClone } from "@setpoint/api";
import {
  type Client,
  isNotFound,
  type Manager,
  preferredResources,
  type ReconcileContext,
  type Result,
  type ServedResource,
  type ServerResources,
  setCondition,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";

/** The controller's name (what `--disable` takes). */
export const NAMESPACE_CONTROLLER = "namespace";
/** The namespace finalizer this controller owns. */
export const NAMESPACE_FINALIZER = "kubernetes";
/** Concurrent reconciles (Kubernetes' --concurrent-namespace-syncs default). */
export const DEFAULT_NAMESPACE_WORKERS = 10;
/** First delay before looking again at a namespace whose content remains (ms). */
export const DEFAULT_CONTENT_RETRY_BASE_MS = 1_000;
/** Longest delay between looks at a namespace whose content remains (ms). */
export const DEFAULT_CONTENT_RETRY_MAX_MS = 60_000;

/** Kubernetes' namespace condition types, in the order it keeps them. */
export const NAMESPACE_CONDITION_TYPES = [
  "NamespaceDeletionDiscoveryFailure",
  "NamespaceDeletionGroupVersionParsingFailure",
  "NamespaceDeletionContentFailure",
  "NamespaceContentRemaining",
  "NamespaceFinalizersRemaining",
] as const;

type ConditionType = (typeof NAMESPACE_CONDITION_TYPES)[number];

/** Reason and message of each condition when all is well (status False). */
const OK: Record<ConditionType, { reason: string; message: string }> = {
  NamespaceDeletionDiscoveryFailure: {
    reason: "ResourcesDiscovered",
    message: "All resources successfully discovered",
  },
  NamespaceDeletionGroupVersionParsingFailure: {
    reason: "ParsedGroupVersions",
    message: "All legacy kube types successfully parsed",
  },
  NamespaceDeletionContentFailure: {
    reason: "ContentDeleted",
    message: "All content successfully deleted, may be waiting on finalization",
  },
  NamespaceContentRemaining: {
    reason: "ContentRemoved",
    message: "All content successfully removed",
  },
  NamespaceFinalizersRemaining: {
    reason: "ContentRemoved",
    message: "All content successfully removed",
  },
};

const NAMESPACE = { apiVersion: "v1", kind: "Namespace" } as const;

export interface NamespaceControllerOptions {
  workers?: number;
  /** First delay while content remains (default DEFAULT_CONTENT_RETRY_BASE_MS). */
  contentRetryBaseMs?: number;
  /** Longest delay while content remains (default DEFAULT_CONTENT_RETRY_MAX_MS). */
  contentRetryMaxMs?: number;
}

/** What one deletion pass found. */
export interface ContentReport {
  /** "resource.group" → objects left. */
  remaining: Map<string, number>;
  /** finalizer → objects left carrying it. */
  finalizers: Map<string, number>;
  /** Per-kind failures, as messages. */
  errors: string[];
}

/** Failing conditions (status True) for a pass; types not listed are set to their OK form. */
export function deletionConditions(
  discovery: Pick<ServerResources, "failed" | "unparsed"> | Error,
  report: ContentReport | undefined,
): Map<ConditionType, { reason: string; message: string }> {
  const out = new Map<ConditionType, { reason: string; message: string }>();
  if (discovery instanceof Error) {
    out.set("NamespaceDeletionDiscoveryFailure", {
      reason: "DiscoveryFailed",
      message: discovery.message,
    });
  } else {
    if (discovery.failed.size > 0) {
      const parts = [...discovery.failed].map(([gv, why]) => `${gv}: ${why}`).sort();
      out.set("NamespaceDeletionDiscoveryFailure", {
        reason: "DiscoveryFailed",
        message: `Discovery failed for some groups, ${discovery.failed.size} failing: unable to retrieve the complete list of server APIs: ${parts.join(", ")}`,
      });
    }
    if (discovery.unparsed.length > 0) {
      out.set("NamespaceDeletionGroupVersionParsingFailure", {
        reason: "GroupVersionParsingFailed",
        message: `unable to parse group versions: ${[...discovery.unparsed].sort().join(", ")}`,
      });
    }
  }
  if (report) {
    if (report.errors.length > 0) {
      out.set("NamespaceDeletionContentFailure", {
        reason: "ContentDeletionFailed",
        message: `Failed to delete all resource types, ${report.errors.length} remaining: ${[...report.errors].sort().join(", ")}`,
      });
    }
    const remaining = [...report.remaining]
      .filter(([, n]) => n > 0)
      .map(([r, n]) => `${r} has ${n} resource instances`)
      .sort();
    if (remaining.length > 0) {
      out.set("NamespaceContentRemaining", {
        reason: "SomeResourcesRemain",
        message: `Some resources are remaining: ${remaining.join(", ")}`,
      });
    }
    const finalizers = [...report.finalizers]
      .filter(([, n]) => n > 0)
      .map(([f, n]) => `${f} in ${n} resource instances`)
      .sort();
    if (finalizers.length > 0) {
      out.set("NamespaceFinalizersRemaining", {
        reason: "SomeFinalizersRemain",
        message: `Some content in the namespace has finalizers remaining: ${finalizers.join(", ")}`,
      });
    }
  }
  return out;
}

/** Sets every namespace condition (in place); returns whether any changed. */
export function applyConditions(
  conditions: Condition[],
  failing: Map<ConditionType, { reason: string; message: string }>,
  now: Date = new Date(),
): boolean {
  let changed = false;
  for (const type of NAMESPACE_CONDITION_TYPES) {
    const f = failing.get(type);
    const input = f
      ? { type, status: "True" as const, reason: f.reason, message: f.message }
      : { type, status: "False" as const, ...OK[type] };
    if (setCondition(conditions, input, now)) changed = true;
  }
  return changed;
}

/** "configmaps." or "widgets.example.com": how Kubernetes names a resource in these messages. */
function resourceLabel(r: ServedResource): string {
  return `${r.plural}.${r.group}`;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class NamespaceController implements BuiltinController {
  readonly name = NAMESPACE_CONTROLLER;
  private client!: Client;
  /** Consecutive passes that found content left, per namespace (for the delay). */
  private readonly passes = new Map<string, number>();

  constructor(private readonly opts: NamespaceControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.client = client;
    mgr
      .controller(NAMESPACE_CONTROLLER)
      .for(NAMESPACE)
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_NAMESPACE_WORKERS,
        // Published on the leader's Lease (it sits in spec.finalizers, not metadata).
        finalizers: [NAMESPACE_FINALIZER],
      })
      .complete((req, ctx) => this.reconcile(req.name, ctx));
  }

  private async reconcile(name: string, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = ctx.reader.peek<KubeObject>(NAMESPACE, name);
    const spec = ns?.spec as { finalizers?: string[] } | undefined;
    if (!ns?.metadata.deletionTimestamp || !spec?.finalizers?.includes(NAMESPACE_FINALIZER)) {
      this.passes.delete(name);
      return undefined;
    }
    let discovery: ServerResources | Error;
    try {
      discovery = await this.client.serverResources({ signal: ctx.signal });
    } catch (e) {
      discovery = e instanceof Error ? e : new Error(String(e));
    }
    const report =
      discovery instanceof Error ? undefined : await this.deleteContent(name, discovery, ctx);
    const failing = deletionConditions(discovery, report);
    const latest = await this.writeConditions(ns, failing, ctx);
    if (!latest) return undefined; // gone meanwhile
    const failed =
      failing.has("NamespaceDeletionDiscoveryFailure") ||
      failing.has("NamespaceDeletionGroupVersionParsingFailure") ||
      failing.has("NamespaceDeletionContentFailure");
    if (failed) {
      const why = [...failing.values()].map((f) => f.message).join("; ");
      throw new Error(`namespace ${name} could not be emptied: ${why}`);
    }
    if (failing.has("NamespaceContentRemaining") || failing.has("NamespaceFinalizersRemaining")) {
      const n = (this.passes.get(name) ?? 0) + 1;
      this.passes.set(name, n);
      const base = this.opts.contentRetryBaseMs ?? DEFAULT_CONTENT_RETRY_BASE_MS;
      const max = this.opts.contentRetryMaxMs ?? DEFAULT_CONTENT_RETRY_MAX_MS;
      const delay = Math.min(max, base * 2 ** Math.min(n - 1, 30));
      ctx.log.info({ delayMs: delay }, "content remains in the namespace; looking again later");
      return { requeueAfter: delay };
    }
    this.passes.delete(name);
    await this.finalize(latest, ctx);
    return undefined;
  }

  /** Deletes the namespace's objects of every deletable namespaced kind; reports what is left. */
  private async deleteContent(
    namespace: string,
    discovery: ServerResources,
    ctx: ReconcileContext,
  ): Promise<ContentReport> {
    const report: ContentReport = { remaining: new Map(), finalizers: new Map(), errors: [] };
    const kinds = preferredResources(discovery.resources).filter(
      (r) => r.namespaced && r.verbs.includes("delete"),
    );
    for (const r of kinds) {
      try {
        await this.deleteKind(namespace, r, ctx);
        if (!r.verbs.includes("list")) continue;
        const left = await this.client.list<KubeObject>(
          { apiVersion: r.apiVersion, kind: r.kind },
          { namespace, metadataOnly: true, signal: ctx.signal },
        );
        if (left.items.length === 0) continue;
        report.remaining.set(resourceLabel(r), left.items.length);
        for (const o of left.items) {
          for (const f of o.metadata.finalizers ?? []) {
            report.finalizers.set(f, (report.finalizers.get(f) ?? 0) + 1);
          }
        }
      } catch (e) {
        if (ctx.signal.aborted) throw e;
        report.errors.push(`${resourceLabel(r)}: ${message(e)}`);
      }
    }
    return report;
  }

  private async deleteKind(
    namespace: string,
    r: ServedResource,
    ctx: ReconcileContext,
  ): Promise<void> {
    const type = { apiVersion: r.apiVersion, kind: r.kind };
    if (r.verbs.includes("deletecollection")) {
      await ctx.client.deleteCollection(type, { namespace, propagationPolicy: "Background" });
      return;
    }
    if (!r.verbs.includes("list")) return;
    const items = await this.client.list<KubeObject>(type, {
      namespace,
      metadataOnly: true,
      signal: ctx.signal,
    });
    for (const o of items.items) {
      if (o.metadata.deletionTimestamp) continue;
      try {
        await ctx.client.delete(type, o.metadata.name ?? "", namespace, {
          propagationPolicy: "Background",
        });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }

  /** Writes the conditions if they changed; returns the namespace as last known (undefined: gone). */
  private async writeConditions(
    ns: KubeObject,
    failing: ReturnType<typeof deletionConditions>,
    ctx: ReconcileContext,
  ): Promise<KubeObject | undefined> {
    const status = (ns.status ?? {}) as { conditions?: Condition[] };
    const conditions = deepClone(status.conditions ?? []);
    if (!applyConditions(conditions, failing)) return ns;
    try {
      return await ctx.client.patch<KubeObject>(
        NAMESPACE,
        ns.metadata.name ?? "",
        undefined,
        { status: { conditions } },
        { type: "merge", subresource: "status" },
      );
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** Removes `kubernetes` from spec.finalizers through /finalize; the server then deletes the namespace. */
  private async finalize(ns: KubeObject, ctx: ReconcileContext): Promise<void> {
    const body = deepClone(ns);
    const spec = (body.spec ?? {}) as { finalizers?: string[] };
    spec.finalizers = (spec.finalizers ?? []).filter((f) => f !== NAMESPACE_FINALIZER);
    body.spec = spec;
    try {
      await ctx.client.update(body, { subresource: "finalize" });
      ctx.log.info("namespace emptied and finalized");
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
