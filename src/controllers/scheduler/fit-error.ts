/**
 * The message of a Pod that fits no node, as kube-scheduler 1.32 words it:
 * "0/N nodes are available: " then each reason with the number of nodes that
 * gave it, as "COUNT REASON", sorted as strings and joined with ", ", then ".";
 * then what preemption found, in the same form: "preemption: 0/N nodes are
 * available: ..." ("Preemption is not helpful for scheduling" for nodes only
 * preempting cannot help, "No preemption victims found for incoming pod" for
 * the others: this scheduler does not preempt, and Pods of lower priority are
 * never evicted for another). A Pod whose preemptionPolicy is Never gets
 * "preemption: not eligible due to preemptionPolicy=Never.".
 */
import type { Pod } from "@setpoint/api";
import type { NodeFailure } from "./filters.ts";

/** kube-scheduler's error when there are no nodes at all. */
export const NO_NODES_AVAILABLE = "no nodes available to schedule pods";
export const PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling";
export const PREEMPTION_NO_VICTIMS = "No preemption victims found for incoming pod";

function histogram(total: number, reasons: Iterable<string>): string {
  const counts = new Map<string, number>();
  for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  const parts = [...counts].map(([r, n]) => `${n} ${r}`).sort();
  return `0/${total} nodes are available: ${parts.join(", ")}.`;
}

/** The FailedScheduling message for a Pod that fits none of `total` nodes. */
export function fitErrorMessage(pod: Pod, total: number, failures: readonly NodeFailure[]): string {
  const main = histogram(
    total,
    failures.flatMap((f) => f.reasons),
  );
  if (pod.spec?.preemptionPolicy === "Never") {
    return `${main} preemption: not eligible due to preemptionPolicy=Never.`;
  }
  const preemption = histogram(
    total,
    failures.map((f) => (f.resolvable ? PREEMPTION_NO_VICTIMS : PREEMPTION_NOT_HELPFUL)),
  );
  return `${main} preemption: ${preemption}`;
}
