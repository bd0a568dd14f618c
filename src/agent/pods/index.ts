/**
 * Pods as processes: the pod worker (worker.ts) runs one Pod's init containers
 * and containers as process groups (process-runner.ts, proc.ts), with their
 * environment (env.ts), probes (probes.ts), restart and image pull back-off
 * (backoff.ts), log files (logs.ts) and volumes (volumes.ts, written by the
 * kubelet's atomic writer, atomic-writer.ts); it keeps a record of each Pod
 * (record.ts) from which the Pod's status is computed (status.ts).
 */

export { parseQuantity } from "@setpoint/api";
export { type PayloadFile, writePayload } from "./atomic-writer.ts";
export { BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, Backoff, goDuration } from "./backoff.ts";
export {
  type CgroupSupport,
  Cgroups,
  type ContainerLimits,
  containerLimits,
} from "./cgroups.ts";
export {
  containerEnv,
  EnvConfigError,
  type EnvSources,
  expandVars,
  type NodeResources,
  referencedSources,
} from "./env.ts";
export {
  containerLogPath,
  LOG_MAX_BYTES,
  LOG_MAX_FILES,
  podLogDir,
  rotateIfLarge,
} from "./logs.ts";
export { PROBE_DEFAULTS } from "./probes.ts";
export { groupExists, isAlive, processStartTicks } from "./proc.ts";
export { resolveCommand } from "./process-runner.ts";
export type { ContainerRecord, PodRecord, RunningProcess, TerminatedRun } from "./record.ts";
export { containerOf, rfc3339 } from "./record.ts";
export { podPhase, podStatus } from "./status.ts";
export { containerStdinPath, writeContainerStdin } from "./stdin.ts";
export {
  containerMounts,
  containerRoot,
  DEFAULT_FILE_MODE,
  mountEnv,
  mountVariable,
  setUpVolumes,
  tearDownVolumes,
  type VolumeError,
  type VolumeSources,
  volumesDir,
} from "./volumes.ts";
export { DEFAULT_GRACE_SECONDS, newPodRecord, PodWorker, type WorkerDeps } from "./worker.ts";
