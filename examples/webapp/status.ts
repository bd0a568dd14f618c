/**
 * The WebApp's status, computed from its Deployment: readyReplicas, the URL,
 * and two conditions (Kubernetes' conventions: one per type, observedGeneration
 * on each). Ready is True only when the Deployment has rolled out this
 * generation's template to every replica and they are ready; Progressing
 * follows the rollout. `observedGeneration` says which spec this was computed from.
 */
import type { Deployment } from "@setpoint/api";
import { findCondition, setStatusCondition } from "@setpoint/runtime";
import { urlOf } from "./children.ts";
import type { WebApp, WebAppStatus } from "./types.ts";

/** The status of `app` given its Deployment as last seen (undefined: not seen yet). */
export function computeStatus(
  app: WebApp,
  deployment: Deployment | undefined,
  now = new Date(),
): WebAppStatus {
  const next: WebApp = structuredClone(app);
  const want = app.spec.replicas ?? 1;
  const ds = deployment?.status;
  const observed =
    deployment !== undefined &&
    (ds?.observedGeneration ?? 0) >= (deployment.metadata.generation ?? 0);
  const updated = ds?.updatedReplicas ?? 0;
  const ready = ds?.readyReplicas ?? 0;
  const total = ds?.replicas ?? 0;
  const rolledOut = observed && updated >= want && total <= want;
  const stalled = findCondition(ds?.conditions as never, "Progressing");
  next.status = {
    ...next.status,
    observedGeneration: app.metadata.generation,
    readyReplicas: ready,
    url: urlOf(app),
  };
  if (observed && stalled?.status === "False") {
    setStatusCondition(
      next,
      { type: "Progressing", status: "False", reason: stalled.reason, message: stalled.message },
      now,
    );
  } else if (!rolledOut) {
    setStatusCondition(
      next,
      {
        type: "Progressing",
        status: "True",
        reason: "RollingOut",
        message: deployment ? `${updated} of ${want} replicas updated` : "creating the Deployment",
      },
      now,
    );
  } else {
    setStatusCondition(
      next,
      {
        type: "Progressing",
        status: "True",
        reason: "RolledOut",
        message: `${want} of ${want} replicas updated`,
      },
      now,
    );
  }
  if (rolledOut && ready >= want) {
    setStatusCondition(
      next,
      {
        type: "Ready",
        status: "True",
        reason: "Available",
        message: `${ready} of ${want} replicas ready`,
      },
      now,
    );
  } else {
    setStatusCondition(
      next,
      {
        type: "Ready",
        status: "False",
        reason: rolledOut ? "ReplicasNotReady" : "RollingOut",
        message: `${ready} of ${want} replicas ready`,
      },
      now,
    );
  }
  return next.status;
}
