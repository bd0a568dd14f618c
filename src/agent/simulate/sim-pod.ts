/**
 * A simulated Pod's life, as the pod record the real agent keeps
 * (../pods/record.ts), so its status comes from the same code as a real Pod's
 * (../pods/status.ts): every container "runs" from the moment the Pod is seen
 * (no process), is ready at once or, with a readiness probe, after the probe's
 * initialDelaySeconds, and, for restartPolicy Never or OnFailure, exits 0
 * after the simulator's run time, making the Pod Succeeded.
 */
import type { Pod, PodStatus } from "@setpoint/api";
import { newContainerRecord, type PodRecord, rfc3339 } from "../pods/record.ts";
import { podStatus } from "../pods/status.ts";

export const SIMULATED_RUNTIME = "simulated";

function runningProcess(pod: Pod, name: string, image: string, startedAt: string) {
  return {
    pid: 0,
    startTicks: 0,
    startedAt,
    image,
    imageID: `${SIMULATED_RUNTIME}://${image}`,
    containerID: `${SIMULATED_RUNTIME}://${pod.metadata.uid ?? ""}/${name}`,
  };
}

/** A record of the Pod with every init container done and every container running. */
export function simulatedRecord(pod: Pod, podIP: string, now: string = rfc3339()): PodRecord {
  const startedAt = pod.status?.startTime ?? now;
  const init = (pod.spec?.initContainers ?? []).map((c) => {
    const rec = newContainerRecord(c.name);
    if (c.restartPolicy === "Always") {
      rec.process = runningProcess(pod, c.name, c.image ?? "", startedAt);
      rec.started = true;
      rec.ready = true;
    } else {
      rec.terminated = {
        exitCode: 0,
        reason: "Completed",
        startedAt,
        finishedAt: startedAt,
        containerID: `${SIMULATED_RUNTIME}://${pod.metadata.uid ?? ""}/${c.name}`,
      };
    }
    rec.done = true;
    return rec;
  });
  const containers = (pod.spec?.containers ?? []).map((c) => {
    const rec = newContainerRecord(c.name);
    rec.process = runningProcess(pod, c.name, c.image ?? "", startedAt);
    rec.started = true;
    rec.ready = !c.readinessProbe;
    return rec;
  });
  return {
    uid: pod.metadata.uid ?? "",
    pod,
    podIP,
    startTime: startedAt,
    initContainers: init,
    containers,
  };
}

/** Marks every container ready (its readiness probe passed). */
export function markReady(rec: PodRecord): void {
  for (const c of rec.containers) c.ready = true;
}

/** Every container exits 0 (a Job's Pod completing). */
export function markSucceeded(rec: PodRecord, now: string = rfc3339()): void {
  for (const c of rec.containers) {
    if (!c.process) continue;
    c.terminated = {
      exitCode: 0,
      reason: "Completed",
      startedAt: c.process.startedAt,
      finishedAt: now,
      containerID: c.process.containerID,
    };
    c.imageID = c.process.imageID;
    delete c.process;
    c.ready = false;
    c.done = true;
  }
}

/** Whether the Pod's containers will not be restarted once they exit. */
export function runsToCompletion(pod: Pod): boolean {
  const policy = pod.spec?.restartPolicy ?? "Always";
  return policy === "Never" || policy === "OnFailure";
}

/** The longest readiness probe initial delay of the Pod's containers, in ms (0 without probes). */
export function readinessDelayMs(pod: Pod): number {
  let ms = 0;
  for (const c of pod.spec?.containers ?? []) {
    if (c.readinessProbe) ms = Math.max(ms, (c.readinessProbe.initialDelaySeconds ?? 0) * 1000);
  }
  return ms;
}

/** Whether any container has a readiness probe. */
export function hasReadinessProbe(pod: Pod): boolean {
  return (pod.spec?.containers ?? []).some((c) => c.readinessProbe);
}

/** The status the simulated kubelet reports for the record. */
export function simulatedStatus(rec: PodRecord, hostIP: string, previous?: PodStatus): PodStatus {
  return podStatus(rec, hostIP, previous);
}
