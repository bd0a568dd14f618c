/**
 * What the inspection commands (`setpoint doctor`, `setpoint finalizers`) read
 * and conclude over the API: the cluster's resources and objects (cluster.ts,
 * resources.ts), objects stuck in deletion and clearing a finalizer safely
 * (stuck.ts, clear.ts, identity.ts), controllers' leases, lag, hot loops and
 * warnings (leases.ts, lag.ts, sample.ts, hot-loop.ts, warnings.ts), every
 * apiserver and etcd member (apiservers.ts, etcd-members.ts), the doctor's
 * verdicts (diagnose.ts), and durations as people type and read them (duration.ts).
 */
export * from "./apiservers.ts";
export * from "./clear.ts";
export * from "./cluster.ts";
export * from "./diagnose.ts";
export * from "./duration.ts";
export * from "./etcd-members.ts";
export * from "./hot-loop.ts";
export * from "./identity.ts";
export * from "./lag.ts";
export * from "./leases.ts";
export * from "./resources.ts";
export * from "./sample.ts";
export * from "./stuck.ts";
export * from "./warnings.ts";
