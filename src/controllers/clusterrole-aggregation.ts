/**
 * The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule`
 * holds the rules of every ClusterRole its selectors match (so `admin`, `edit` and
 * `view` grow with the roles labelled `rbac.authorization.k8s.io/aggregate-to-*`,
 * as a custom resource's author adds them), as Kubernetes' controller of the same
 * name does. Any ClusterRole's change looks again at every aggregated one; a
 * role's rules are written only when they differ.
 */
import { type KubeObject, labelSelectorFromMetav1, matchesLabels } from "@setpoint/api";
import {
  type Client,
  isConflict,
  isNotFound,
  type Manager,
  type ReconcileContext,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";

/** The controller's name (what `--disable-controllers` takes). */
export const CLUSTER_ROLE_AGGREGATION_CONTROLLER = "clusterrole-aggregation";

const CLUSTER_ROLE = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole" } as const;

interface ClusterRole extends KubeObject {
  rules?: Record<string, unknown>[];
  aggregationRule?: { clusterRoleSelectors?: Record<string, unknown>[] };
}

function selects(selector: Record<string, unknown>, role: KubeObject): boolean {
  try {
    return matchesLabels(labelSelectorFromMetav1(selector as never), role.metadata.labels ?? {});
  } catch {
    return false;
  }
}

/** The rules an aggregated role should hold: those of the roles it selects, by name, without repeats. */
export function aggregatedRules(role: ClusterRole, all: ClusterRole[]): Record<string, unknown>[] {
  const selectors = role.aggregationRule?.clusterRoleSelectors ?? [];
  const out: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  const sources = all
    .filter((r) => r.metadata.name !== role.metadata.name && selectors.some((s) => selects(s, r)))
    .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  for (const source of sources) {
    for (const rule of source.rules ?? []) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(rule);
    }
  }
  return out;
}

export class ClusterRoleAggregationController implements BuiltinController {
  readonly name = CLUSTER_ROLE_AGGREGATION_CONTROLLER;

  setup(mgr: Manager, client: Client = mgr.client): void {
    mgr
      .controller(CLUSTER_ROLE_AGGREGATION_CONTROLLER)
      .for(CLUSTER_ROLE)
      .withOptions({ client })
      .complete((_req, ctx) => this.reconcile(ctx));
  }

  private async reconcile(ctx: ReconcileContext): Promise<undefined> {
    const all = (await ctx.reader.list<ClusterRole>(CLUSTER_ROLE)).items;
    for (const role of all) {
      if (!role.aggregationRule) continue;
      const rules = aggregatedRules(role, all);
      if (JSON.stringify(rules) === JSON.stringify(role.rules ?? [])) continue;
      try {
        await ctx.client.update({ ...role, rules });
        ctx.log.info({ clusterRole: role.metadata.name, rules: rules.length }, "aggregated rules");
      } catch (e) {
        // Changed or gone meanwhile: its own event brings it back.
        if (!isConflict(e) && !isNotFound(e)) throw e;
      }
    }
    return undefined;
  }
}
