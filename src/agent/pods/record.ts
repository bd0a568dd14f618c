/**
 * What the agent remembers of a Pod, on disk and in memory: the Pod as last
 * seen (metadata and spec), its address, and per container the running process
 * (pid and start time, to adopt it after a restart of the agent), the restart
 * count, how its last run ended, why it waits, and its readiness. Pod status is
 * computed from this (status.ts); the records of all Pods are the agent's state
 * file (../state/).
 */

import type { Pod } from "@setpoint/api";
import type { PodSandbox } from "../sandbox/index.ts";
import type { ProcessIdentity } from "./proc.ts";

/** How a run of a container ended (a ContainerStateTerminated). */
export interface TerminatedRun {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt: string;
  finishedAt: string;
  containerID: string;
}

/** A running process of a container. */
export interface RunningProcess extends ProcessIdentity {
  startedAt: string;
  containerID: string;
  imageID: string;
  /** The image reference as the Pod names it. */
  image: string;
  /** The container's cgroup (cgroups.ts), when its limits are enforced. */
  cgroup?: string;
  /**
   * "cri": its output goes through the log relay, which writes the log file in
   * the CRI format. Absent: the process appends to the file itself (started
   * without a relay, or by an agent from before the relay), and the agent rotates
   * the file by copying and truncating it.
   */
  logFormat?: "cri";
}

export interface ContainerRecord {
  name: string;
  restartCount: number;
  process?: RunningProcess;
  /** The last run's end: `lastState` while it runs again or waits, else `state`. */
  terminated?: TerminatedRun;
  /** The run before `terminated`: `lastState` while `terminated` is the state shown. */
  previous?: TerminatedRun;
  /** Why it does not run (ContainerCreating, ErrImagePull, CrashLoopBackOff, ...). */
  waiting?: { reason: string; message?: string };
  /** The image of the last run, for the status of a container that does not run. */
  imageID?: string;
  /** Readiness (probe or, without one, running). */
  ready: boolean;
  /** The startup probe passed (or there is none) for the current run. */
  started: boolean;
  /** Will not run again (restart policy), or an init container that succeeded. */
  done: boolean;
}

export interface PodRecord {
  uid: string;
  /** The Pod as last seen from the apiserver (or from disk). */
  pod: Pod;
  podIP: string;
  startTime: string;
  initContainers: ContainerRecord[];
  containers: ContainerRecord[];
  /** Set once the Pod is being stopped (deleted, or gone from the apiserver). */
  terminating?: { since: string; gracePeriodSeconds: number };
  /** Every process stopped after terminating: the Pod object can go. */
  stopped?: boolean;
  /** The Pod's sandbox in the isolated mode (its network namespace, veth and mount points). */
  sandbox?: PodSandbox;
}

/** The record of the container (or init container) `name` of `record`. */
export function containerOf(
  record: PodRecord | undefined,
  name: string,
): ContainerRecord | undefined {
  return record
    ? [...record.initContainers, ...record.containers].find((c) => c.name === name)
    : undefined;
}

export function newContainerRecord(name: string): ContainerRecord {
  return { name, restartCount: 0, ready: false, started: false, done: false };
}

/** RFC 3339 in whole seconds, as Kubernetes writes Time. */
export function rfc3339(ms: number = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
