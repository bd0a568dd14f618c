/**
 * What the ConfigMapSet example should have made of the cluster, checked
 * against what the server holds (read straight from it, past any proxy).
 */

import { SET_LABEL } from "../../../examples/configmapset/configmap.ts";
import {
  type ConfigMap,
  ConfigMapKind,
  type ConfigMapSet,
  ConfigMapSetKind,
  type Namespace,
  NamespaceKind,
} from "../../../examples/configmapset/types.ts";
import { deepEqual } from "../../../packages/api/src/deep-copy.ts";
import { labelSelectorFromMetav1, matchesLabels } from "../../../packages/api/src/labels.ts";
import type { Client } from "../../../packages/runtime/src/client/client.ts";
import { findCondition } from "../../../packages/runtime/src/helpers/conditions.ts";

/** The first way the cluster differs from what the sets ask for, or undefined when it agrees. */
export async function divergence(client: Client): Promise<string | undefined> {
  const sets = (await client.list<ConfigMapSet>(ConfigMapSetKind)).items;
  const namespaces = (await client.list<Namespace>(NamespaceKind)).items;
  const cms = new Map(
    (await client.list<ConfigMap>(ConfigMapKind)).items.map((c) => [
      `${c.metadata.namespace}/${c.metadata.name}`,
      c,
    ]),
  );
  const uids = new Set(sets.map((s) => s.metadata.uid));
  for (const cm of cms.values()) {
    const owner = cm.metadata.ownerReferences?.find((r) => r.controller);
    if (owner?.kind === "ConfigMapSet" && !uids.has(owner.uid)) {
      return `ConfigMap ${cm.metadata.namespace}/${cm.metadata.name} is controlled by a set that is gone`;
    }
  }
  for (const set of sets) {
    const name = set.metadata.name ?? "";
    const sel = labelSelectorFromMetav1(set.spec.namespaceSelector);
    const matching = namespaces.filter(
      (ns) => !ns.metadata.deletionTimestamp && matchesLabels(sel, ns.metadata.labels),
    );
    const wanted = new Set(matching.map((ns) => ns.metadata.name));
    for (const ns of namespaces) {
      const nsName = ns.metadata.name ?? "";
      const cm = cms.get(`${nsName}/${name}`);
      const controlled = cm?.metadata.ownerReferences?.some(
        (r) => r.controller && r.uid === set.metadata.uid,
      );
      if (!wanted.has(nsName)) {
        if (controlled) return `set ${name}: ConfigMap left in non-matching namespace ${nsName}`;
        continue;
      }
      if (!cm) return `set ${name}: no ConfigMap in ${nsName}`;
      if (!controlled) return `set ${name}: ConfigMap in ${nsName} not controlled by the set`;
      if (!deepEqual(cm.data ?? {}, set.spec.template?.data ?? {})) {
        return `set ${name}: ConfigMap in ${nsName} has data ${JSON.stringify(cm.data)}`;
      }
      const labels = { ...(set.spec.template?.labels ?? {}), [SET_LABEL]: name };
      for (const [k, v] of Object.entries(labels)) {
        if (cm.metadata.labels?.[k] !== v) {
          return `set ${name}: ConfigMap in ${nsName} lacks label ${k}=${v}`;
        }
      }
    }
    const st = set.status;
    if (st?.observedGeneration !== set.metadata.generation) {
      return `set ${name}: observedGeneration ${st?.observedGeneration} != generation ${set.metadata.generation}`;
    }
    if (st?.matchingNamespaces !== wanted.size || st?.readyConfigMaps !== wanted.size) {
      return `set ${name}: status counts ${st?.matchingNamespaces}/${st?.readyConfigMaps}, want ${wanted.size}`;
    }
    const ready = findCondition(st?.conditions, "Ready");
    if (ready?.status !== "True" || ready.observedGeneration !== set.metadata.generation) {
      return `set ${name}: Ready is ${JSON.stringify(ready)}`;
    }
  }
  return undefined;
}
