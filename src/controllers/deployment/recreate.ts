/**
 * The Recreate strategy: scale every old ReplicaSet to 0, wait until none of
 * their Pods is left running (terminating Pods count), then create or scale
 * up the new ReplicaSet to all replicas at once.
 */
import type { Pod, ReplicaSet } from "@setpoint/api";
import type { Rollout } from "./sync.ts";
import { deploymentComplete, replicasOf, sumStatus } from "./util.ts";

export async function rolloutRecreate(
  r: Rollout,
  rsList: ReplicaSet[],
  podsOf: (rs: ReplicaSet) => readonly Pod[],
): Promise<void> {
  let { newRS, oldRSs } = await r.newAndOld(rsList, false);
  const all = () => (newRS ? [...oldRSs, newRS] : [...oldRSs]);
  let scaledDown = false;
  for (const [i, rs] of oldRSs.entries()) {
    if ((rs.spec?.replicas ?? 0) === 0) continue;
    const out = await r.scaleAndRecord(rs, 0);
    oldRSs[i] = out.rs;
    if (out.scaled) scaledDown = true;
  }
  if (scaledDown) {
    await r.syncRolloutStatus(all(), newRS);
    return;
  }
  const running =
    sumStatus(oldRSs, "replicas") > 0 ||
    oldRSs.some((rs) =>
      podsOf(rs).some((p) => p.status?.phase !== "Failed" && p.status?.phase !== "Succeeded"),
    );
  if (running) {
    await r.syncRolloutStatus(all(), newRS);
    return;
  }
  if (!newRS) ({ newRS, oldRSs } = await r.newAndOld(rsList, true));
  if (newRS) newRS = (await r.scaleAndRecord(newRS, replicasOf(r.d))).rs;
  if (deploymentComplete(r.d, r.d.status)) await r.cleanup(oldRSs);
  await r.syncRolloutStatus(all(), newRS);
}
