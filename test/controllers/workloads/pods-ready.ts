/**
 * A stand-in for nodes in the ReplicaSet and Deployment tests: watches one
 * namespace's Pods and marks each Running and Ready through the status
 * subresource, as a kubelet would once its containers start, with a Pod IP
 * of its own (10.244.0.0/16, one per Pod marked) for the endpoint controllers. `hold` keeps
 * chosen Pods Pending (never ready), e.g. to stall a rollout.
 */
import type { Pod } from "@setpoint/api";
import { type Client, Informer, isConflict, isNotFound } from "@setpoint/runtime";

const POD = { apiVersion: "v1", kind: "Pod" } as const;

export interface PodsReady {
  /** Marks Pods matching `hold` not ready from now on (ones already ready stay ready). */
  setHold(hold: ((p: Pod) => boolean) | undefined): void;
  stop(): Promise<void>;
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

/** Starts marking the namespace's Pods ready; `stop()` ends it. */
export function startPodsReady(
  client: Client,
  namespace: string,
  opts: { hold?: (p: Pod) => boolean } = {},
): PodsReady {
  let hold = opts.hold;
  let ips = 0;
  const stop = new AbortController();
  const informer = new Informer<Pod>(client, POD, { namespace });
  const pending = new Set<Promise<void>>();
  const mark = (p: Pod) => {
    if (stop.signal.aborted || p.metadata.deletionTimestamp || hold?.(p)) return;
    if (p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return;
    const t = now();
    const n = ++ips;
    const ip = p.status?.podIP ?? `10.244.${(n >> 8) & 255}.${n & 255}`;
    const w = client
      .patch(
        POD,
        p.metadata.name ?? "",
        namespace,
        {
          status: {
            phase: "Running",
            startTime: t,
            podIP: ip,
            podIPs: [{ ip }],
            conditions: [
              { type: "PodScheduled", status: "True", lastTransitionTime: t },
              { type: "Initialized", status: "True", lastTransitionTime: t },
              { type: "ContainersReady", status: "True", lastTransitionTime: t },
              { type: "Ready", status: "True", lastTransitionTime: t },
            ],
          },
        },
        { type: "merge", subresource: "status" },
      )
      .then(
        () => undefined,
        (e: unknown) => {
          if (!isNotFound(e) && !isConflict(e) && !stop.signal.aborted) throw e;
        },
      )
      .finally(() => pending.delete(w));
    pending.add(w);
  };
  informer.addEventHandler({ onAdd: mark, onUpdate: (_, p) => mark(p) });
  informer.start(stop.signal);
  return {
    setHold(h) {
      hold = h;
    },
    async stop() {
      stop.abort();
      await Promise.allSettled([...pending]);
    },
  };
}
