/**
 * The RollingUpdate strategy, step by step as Kubernetes takes it: scale the
 * new ReplicaSet up as far as maxSurge allows; otherwise scale old ones down
 * as far as maxUnavailable allows (unhealthy replicas first); once complete,
 * clean up history. Each pass makes at most one of these moves and reads the
 * ReplicaSets' reported availability, so the bounds hold at every moment.
 */
import type { ReplicaSet } from "@setpoint/api";
import type { Rollout } from "./sync.ts";
import { newReplicaSetReplicas } from "./sync.ts";
import { byCreation, deploymentComplete, maxUnavailable, replicasOf, sumSpec } from "./util.ts";

export async function rolloutRolling(r: Rollout, rsList: ReplicaSet[]): Promise<void> {
  const { newRS, oldRSs } = await r.newAndOld(rsList, true);
  if (!newRS) return;
  const all = () => [...oldRSs, newRS];
  // Scale up the new ReplicaSet, if it can.
  const desired = replicasOf(r.d);
  const current = newRS.spec?.replicas ?? 0;
  if (current !== desired) {
    const to = current > desired ? desired : newReplicaSetReplicas(r.d, all(), newRS);
    const { scaled } = await r.scaleAndRecord(newRS, to);
    if (scaled) {
      await r.syncRolloutStatus(all(), newRS);
      return;
    }
  }
  // Scale down old ReplicaSets, if it can.
  if (await reconcileOld(r, oldRSs, newRS)) {
    await r.syncRolloutStatus([...oldRSs, newRS], newRS);
    return;
  }
  if (deploymentComplete(r.d, r.d.status)) await r.cleanup(oldRSs);
  await r.syncRolloutStatus(all(), newRS);
}

/** Scales old ReplicaSets down within maxUnavailable; replaces them in `oldRSs` as written. */
async function reconcileOld(r: Rollout, oldRSs: ReplicaSet[], newRS: ReplicaSet): Promise<boolean> {
  const active = oldRSs.filter((rs) => (rs.spec?.replicas ?? 0) > 0);
  if (sumSpec(active) === 0) return false;
  const d = r.d;
  const minAvailable = replicasOf(d) - maxUnavailable(d);
  const newUnavailable = (newRS.spec?.replicas ?? 0) - (newRS.status?.availableReplicas ?? 0);
  const maxScaledDown = sumSpec([...oldRSs, newRS]) - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return false;
  const replace = (from: ReplicaSet, to: ReplicaSet) => {
    const i = oldRSs.indexOf(from);
    if (i >= 0) oldRSs[i] = to;
  };
  // First the replicas that are not available anyway.
  let cleaned = 0;
  for (const rs of [...oldRSs].sort(byCreation)) {
    if (cleaned >= maxScaledDown) break;
    const n = rs.spec?.replicas ?? 0;
    const unhealthy = n - (rs.status?.availableReplicas ?? 0);
    if (n === 0 || unhealthy <= 0) continue;
    const down = Math.min(maxScaledDown - cleaned, unhealthy);
    const out = await r.scaleAndRecord(rs, n - down);
    replace(rs, out.rs);
    cleaned += down;
  }
  // Then available ones, as long as enough stay available. A ReplicaSet just
  // scaled down still reports the Pods it is deleting as available until its
  // status catches up: it counts for no more than its replicas, so a second pass
  // meanwhile does not take those Pods down twice.
  const available = [...oldRSs, newRS].reduce(
    (n, rs) => n + Math.min(rs.spec?.replicas ?? 0, rs.status?.availableReplicas ?? 0),
    0,
  );
  let scaledDown = 0;
  if (available > minAvailable) {
    const total = available - minAvailable;
    for (const rs of [...oldRSs].sort(byCreation)) {
      if (scaledDown >= total) break;
      const n = rs.spec?.replicas ?? 0;
      if (n === 0) continue;
      const down = Math.min(n, total - scaledDown);
      const out = await r.scaleAndRecord(rs, n - down);
      replace(rs, out.rs);
      scaledDown += down;
    }
  }
  return cleaned + scaledDown > 0;
}
