/**
 * Ranking the nodes a Pod fits, as kube-scheduler's default scoring plugins do,
 * each normalised to 0..100 and weighted as in its default profile:
 *
 * - NodeResourcesFit, least allocated (weight 1): the share of cpu and memory
 *   left free after placing the Pod, averaged (Pods that request nothing count
 *   with Kubernetes' non-zero defaults, 100m and 200Mi per container);
 * - PodTopologySpread's default hostname spreading (weight 2): fewer Pods of
 *   the same controller on the node score higher;
 * - TaintToleration (weight 3): fewer PreferNoSchedule taints the Pod does not
 *   tolerate score higher;
 * - NodeAffinity (weight 2): the summed weights of the preferred node affinity
 *   terms the node matches.
 *
 * The best node wins; ties are broken at random, so Pods placed in a burst
 * spread instead of piling onto the first of equals.
 */
import type { Node, Pod } from "@setpoint/api";
import { tolerates } from "../nodelifecycle/taints.ts";
import { matchesTerm } from "./filters.ts";
import type { NodeUsage } from "./node-infos.ts";
import type { ResourceList } from "./resources.ts";

export const WEIGHT_LEAST_ALLOCATED = 1;
export const WEIGHT_SPREAD = 2;
export const WEIGHT_TAINTS = 3;
export const WEIGHT_AFFINITY = 2;

export interface Candidate {
  node: Node;
  alloc: ResourceList;
  usage: NodeUsage;
}

function leastAllocated(c: Candidate, want: { cpu: number; memory: number }): number {
  const free = (cap: number | undefined, used: number, add: number) =>
    cap && cap > 0 ? Math.max(0, (cap - used - add) / cap) : 0;
  const cpu = free(c.alloc.cpu, c.usage.nonZero.cpu, want.cpu);
  const mem = free(c.alloc.memory, c.usage.nonZero.memory, want.memory);
  return ((cpu + mem) / 2) * 100;
}

/** Scores `raw` so the highest is 100 (or, with `reverse`, the lowest is 100); all 100 when they are equal and 0. */
function normalise(raw: number[], reverse: boolean): number[] {
  const max = Math.max(0, ...raw);
  if (max === 0) return raw.map(() => (reverse ? 100 : 0));
  return raw.map((v) => (reverse ? ((max - v) * 100) / max : (v * 100) / max));
}

/** The index of the best candidate (random among equals). */
export function pickNode(
  pod: Pod,
  candidates: readonly Candidate[],
  want: { cpu: number; memory: number },
  owner: string | undefined,
  random: () => number = Math.random,
): number {
  if (candidates.length === 1) return 0;
  const tolerations = pod.spec?.tolerations ?? [];
  const preferred =
    pod.spec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  const spread = normalise(
    candidates.map((c) => (owner ? (c.usage.owners.get(owner) ?? 0) : 0)),
    true,
  );
  const taints = normalise(
    candidates.map(
      (c) =>
        (c.node.spec?.taints ?? []).filter(
          (t) => t.effect === "PreferNoSchedule" && !tolerations.some((x) => tolerates(x, t)),
        ).length,
    ),
    true,
  );
  const affinity = normalise(
    candidates.map((c) =>
      preferred.reduce(
        (sum, p) =>
          p.preference && matchesTerm(p.preference, c.node) ? sum + (p.weight ?? 0) : sum,
        0,
      ),
    ),
    false,
  );
  let best = -1;
  let bestScore = Number.NEGATIVE_INFINITY;
  let ties = 0;
  for (let i = 0; i < candidates.length; i++) {
    const score = Math.round(
      WEIGHT_LEAST_ALLOCATED * leastAllocated(candidates[i], want) +
        WEIGHT_SPREAD * spread[i] +
        WEIGHT_TAINTS * taints[i] +
        WEIGHT_AFFINITY * affinity[i],
    );
    if (score > bestScore) {
      best = i;
      bestScore = score;
      ties = 1;
    } else if (score === bestScore) {
      ties++;
      if (random() * ties < 1) best = i;
    }
  }
  return best;
}
