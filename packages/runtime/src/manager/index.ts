/**
 * The manager, which runs a process's controllers: the shared cache, leader
 * election, health probes, the metrics endpoint, Event recording, and
 * runnables.
 *
 * - Leader election: Lease 15 s, renew deadline 10 s, retry 2 s; the standby
 *   keeps its caches and queues warm; release on shutdown. The finalizers the
 *   controllers declare are published on the Lease (`setpoint.dev/finalizers`),
 *   and so are per-key reconcile counts over the last minute, each
 *   controller's 10 busiest keys (`setpoint.dev/reconcile-stats`; counted in
 *   at most 768 counters per controller), for hot-loop detection.
 * - `/healthz` and `/readyz` fail when an informer has had no watch for 60 s;
 *   `/readyz` until the caches have synced.
 * - Runnables (`mgr.add`): components that run leader or not (a discovery loop,
 *   side informers of the shared cache), started once the caches have synced,
 *   each a `/readyz` check, stopped on shutdown before the informers (each gets
 *   up to 5 s to return).
 */

export {
  type EventOptions,
  type EventRecorder,
  type EventSource,
  type EventType,
  lastOccurrence,
  newEvent,
  Recorder,
  type RecorderOptions,
} from "./events.ts";
export { type CheckResult, type HealthCheck, HealthChecks } from "./health.ts";
export {
  LEASE_TYPE,
  LeaderElector,
  type LeaderElectorOptions,
  type Lease,
  type LeaseSpec,
} from "./leader-election.ts";
export {
  DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS,
  FINALIZERS_ANNOTATION,
  type LeaderElectionOptions,
  Manager,
  type ManagerOptions,
  RECONCILE_STATS_ANNOTATION,
  RUNNABLE_STOP_TIMEOUT_MS,
  type Runnable,
} from "./manager.ts";
