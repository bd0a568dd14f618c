/**
 * A stand-in for the kubelet in the Job tests: writes a Pod's status through
 * the status subresource as a kubelet would when its containers start
 * (Running, Ready) and when they end (Succeeded or Failed, Ready turned
 * False, each container terminated with an exit code and finishedAt).
 * `finishedAgoMs` back-dates the end, so the Job's Pod failure backoff
 * (measured from it) has already passed.
 */
import type { Job, Pod } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";

const POD = { apiVersion: "v1", kind: "Pod" } as const;

function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

/** Marks the Pod Running and Ready. */
export async function runPod(client: Client, p: Pod): Promise<void> {
  const t = stamp(Date.now());
  await client.patch(
    POD,
    p.metadata.name ?? "",
    p.metadata.namespace,
    {
      status: {
        phase: "Running",
        startTime: t,
        conditions: [
          { type: "PodScheduled", status: "True", lastTransitionTime: t },
          { type: "Initialized", status: "True", lastTransitionTime: t },
          { type: "ContainersReady", status: "True", lastTransitionTime: t },
          { type: "Ready", status: "True", lastTransitionTime: t },
        ],
      },
    },
    { type: "merge", subresource: "status" },
  );
}

/** Ends the Pod: phase Succeeded (exit 0) or Failed (exit 1), finished `finishedAgoMs` ago. */
export async function finishPod(
  client: Client,
  p: Pod,
  phase: "Succeeded" | "Failed",
  finishedAgoMs = 0,
): Promise<void> {
  const at = stamp(Date.now() - finishedAgoMs);
  const exitCode = phase === "Succeeded" ? 0 : 1;
  await client.patch(
    POD,
    p.metadata.name ?? "",
    p.metadata.namespace,
    {
      status: {
        phase,
        conditions: [
          { type: "Ready", status: "False", reason: "PodCompleted", lastTransitionTime: at },
          {
            type: "ContainersReady",
            status: "False",
            reason: "PodCompleted",
            lastTransitionTime: at,
          },
        ],
        containerStatuses: (p.spec?.containers ?? []).map((c) => ({
          name: c.name,
          image: c.image ?? "",
          imageID: "",
          ready: false,
          restartCount: 0,
          state: {
            terminated: {
              exitCode,
              reason: phase === "Succeeded" ? "Completed" : "Error",
              startedAt: at,
              finishedAt: at,
            },
          },
        })),
      },
    },
    { type: "merge", subresource: "status" },
  );
}

/** The Job's Pods that are not being deleted, oldest first. */
export async function jobPods(client: Client, job: Job): Promise<Pod[]> {
  const list = await client.list<Pod>(POD, {
    namespace: job.metadata.namespace,
    labelSelector: `batch.kubernetes.io/controller-uid=${job.metadata.uid}`,
  });
  return list.items
    .filter((p) => !p.metadata.deletionTimestamp)
    .sort((a, b) =>
      (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""),
    );
}

/** The Job's Pods still running (neither finished nor being deleted). */
export async function runningPods(client: Client, job: Job): Promise<Pod[]> {
  return (await jobPods(client, job)).filter(
    (p) => p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed",
  );
}
