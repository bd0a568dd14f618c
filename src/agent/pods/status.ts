/**
 * A Pod's status from the agent's record (record.ts), as the kubelet reports it:
 * phase, the PodReadyToStartContainers, Initialized, ContainersReady and Ready
 * conditions (with Kubernetes' reasons and messages; a condition's
 * lastTransitionTime moves only when its status does), hostIP, podIP, startTime,
 * and a status per container (state, lastState, ready, started, restartCount,
 * image, imageID, containerID).
 */
import type { ContainerStatus, PodCondition, PodStatus } from "@setpoint/api";
import type { ContainerRecord, PodRecord, TerminatedRun } from "./record.ts";
import { rfc3339 } from "./record.ts";

function containerStatus(
  rec: ContainerRecord,
  image: string,
  init: boolean,
  pending: boolean,
): ContainerStatus {
  const status: ContainerStatus = {
    name: rec.name,
    image,
    imageID: rec.process?.imageID ?? rec.imageID ?? "",
    ready: rec.ready,
    restartCount: rec.restartCount,
    started: Boolean(rec.process) && rec.started,
    state: {},
    lastState: {},
  };
  const terminated = terminatedState(rec.terminated);
  if (rec.process) {
    status.containerID = rec.process.containerID;
    status.state = { running: { startedAt: rec.process.startedAt } };
    if (terminated) status.lastState = { terminated };
  } else if (rec.waiting || !terminated) {
    const waiting = rec.waiting ?? {
      reason: pending || init ? "PodInitializing" : "ContainerCreating",
    };
    status.state = { waiting };
    if (terminated) status.lastState = { terminated };
  } else if (terminated) {
    status.containerID = terminated.containerID;
    status.state = { terminated };
    // As the kubelet: the instance before the one shown, until the next run starts.
    const previous = terminatedState(rec.previous);
    if (previous) status.lastState = { terminated: previous };
  }
  return status;
}

function terminatedState(term: TerminatedRun | undefined) {
  return (
    term && {
      exitCode: term.exitCode,
      ...(term.signal ? { signal: term.signal } : {}),
      reason: term.reason,
      ...(term.message ? { message: term.message } : {}),
      startedAt: term.startedAt,
      finishedAt: term.finishedAt,
      containerID: term.containerID,
    }
  );
}

function condition(
  type: string,
  ok: boolean,
  previous: PodCondition[] | undefined,
  now: string,
  reason?: string,
  message?: string,
): PodCondition {
  const status = ok ? "True" : "False";
  const prev = previous?.find((c) => c.type === type);
  return {
    type,
    status,
    lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
    ...(!ok && reason ? { reason } : {}),
    ...(!ok && message ? { message } : {}),
  };
}

/** The phase: Pending until the containers run, Succeeded/Failed once none will run again. */
export function podPhase(rec: PodRecord): "Pending" | "Running" | "Succeeded" | "Failed" {
  const policy = rec.pod.spec?.restartPolicy ?? "Always";
  const initFailed = rec.initContainers.some(
    (c) => c.done && c.terminated && c.terminated.exitCode !== 0,
  );
  if (initFailed && policy === "Never") return "Failed";
  if (!rec.initContainers.every((c) => c.done && c.terminated?.exitCode === 0)) return "Pending";
  const cs = rec.containers;
  if (cs.every((c) => c.done && c.terminated)) {
    return cs.every((c) => c.terminated?.exitCode === 0) ? "Succeeded" : "Failed";
  }
  if (cs.some((c) => c.process || c.terminated)) return "Running";
  return "Pending";
}

/** The status to report for the Pod, keeping transition times from `previous`. */
export function podStatus(rec: PodRecord, hostIP: string, previous?: PodStatus): PodStatus {
  const now = rfc3339();
  const spec = rec.pod.spec;
  const phase = podPhase(rec);
  const prevConds = previous?.conditions;
  const initDone = rec.initContainers.every((c) => c.done && c.terminated?.exitCode === 0);
  const incompleteInit = rec.initContainers
    .filter((c) => !(c.done && c.terminated?.exitCode === 0))
    .map((c) => c.name);
  const unready = rec.containers.filter((c) => !c.ready).map((c) => c.name);
  const terminal = phase === "Succeeded" || phase === "Failed";
  const readyReason = terminal ? "PodCompleted" : "ContainersNotReady";
  const readyMessage = terminal
    ? undefined
    : `containers with unready status: [${unready.join(" ")}]`;
  const ready = !terminal && unready.length === 0;
  const conditions: PodCondition[] = [
    condition("PodReadyToStartContainers", !rec.stopped, prevConds, now),
    condition(
      "Initialized",
      initDone || (terminal && incompleteInit.length === 0),
      prevConds,
      now,
      terminal && !initDone ? "PodCompleted" : "ContainersNotInitialized",
      `containers with incomplete status: [${incompleteInit.join(" ")}]`,
    ),
    condition("Ready", ready, prevConds, now, readyReason, readyMessage),
    condition("ContainersReady", ready, prevConds, now, readyReason, readyMessage),
  ];
  for (const c of prevConds ?? []) {
    if (!conditions.some((k) => k.type === c.type)) conditions.push(c);
  }
  const images = new Map(
    [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].map((c) => [c.name, c.image]),
  );
  const status: PodStatus = {
    ...previous,
    phase,
    conditions,
    hostIP,
    hostIPs: [{ ip: hostIP }],
    podIP: rec.podIP,
    podIPs: [{ ip: rec.podIP }],
    startTime: rec.startTime,
    containerStatuses: rec.containers.map((c) =>
      containerStatus(c, images.get(c.name) ?? "", false, !initDone),
    ),
  };
  if (rec.initContainers.length) {
    status.initContainerStatuses = rec.initContainers.map((c) =>
      containerStatus(c, images.get(c.name) ?? "", true, false),
    );
  } else {
    delete status.initContainerStatuses;
  }
  return status;
}
