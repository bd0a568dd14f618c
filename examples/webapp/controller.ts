/**
 * The WebApp controller. The request carries only a name; each pass reads the
 * WebApp and what it owns (from the cache) and converges:
 * - a Deployment, a Service and an Ingress, each controlled by the WebApp and
 *   written with server-side apply under the field manager `webapp-controller`,
 *   stating only the fields it owns (an unchanged pass changes nothing, and a
 *   person's edit to one of those fields is set back, with a warning to them
 *   from the apiserver as they make it);
 * - status (observedGeneration, readyReplicas, url, Ready and Progressing),
 *   written only when it changed;
 * - once, when the app is first Ready, a call to `spec.notify.url` with an
 *   idempotency key (runOneShot);
 * - an object of the same name that it does not control is not taken over: a
 *   TerminalError, surfaced as Ready=False (NameConflict), not retried.
 * Deletion is the garbage collector's: the owned objects go with the WebApp.
 */
import type { Deployment, KubeObject } from "@setpoint/api";
import {
  ActionRefusedError,
  isConditionTrue,
  isControlledBy,
  isNotFound,
  isTerminalError,
  type Manager,
  type ReconcileContext,
  type Request,
  runOneShot,
  setErrorCondition,
  TerminalError,
  updateStatusIfChanged,
} from "@setpoint/runtime";
import {
  desiredDeployment,
  desiredIngress,
  desiredService,
  FIELD_MANAGER,
  urlOf,
} from "./children.ts";
import { computeStatus } from "./status.ts";
import { DeploymentKind, IngressKind, ServiceKind, type WebApp, WebAppKind } from "./types.ts";

/** The controller's name (and its work queue's). */
export const CONTROLLER_NAME = "webapp";
/** The one-shot action called when an app is first Ready. */
export const NOTIFY_ACTION = "notify-ready";

export function addWebAppController(mgr: Manager): void {
  mgr
    .controller(CONTROLLER_NAME)
    .for(WebAppKind)
    .owns(DeploymentKind)
    .owns(ServiceKind)
    .owns(IngressKind)
    .complete(reconcileWebApp);
}

export async function reconcileWebApp(req: Request, ctx: ReconcileContext): Promise<void> {
  let app: WebApp;
  try {
    app = await ctx.reader.get(WebAppKind, req.name, req.namespace);
  } catch (e) {
    if (isNotFound(e)) return; // deleted: the garbage collector removes what it owned
    throw e;
  }
  if (app.metadata.deletionTimestamp) return;
  try {
    await converge(app, ctx);
  } catch (e) {
    if (!isTerminalError(e)) throw e;
    const fresh = await ctx.client.get(WebAppKind, req.name, req.namespace);
    const next = structuredClone(fresh);
    setErrorCondition(next, e);
    next.status = { ...next.status, observedGeneration: fresh.metadata.generation };
    await updateStatusIfChanged(ctx.client, fresh, next.status);
    throw e;
  }
}

async function converge(app: WebApp, ctx: ReconcileContext): Promise<void> {
  let deployment: Deployment | undefined;
  for (const desired of [desiredDeployment(app), desiredService(app), desiredIngress(app)]) {
    await ensureControlled(ctx, app, desired);
    const applied = await ctx.client.apply(desired, { fieldManager: FIELD_MANAGER, force: true });
    if (desired.kind === "Deployment") deployment = applied as Deployment;
  }
  // The status is computed from the Deployment as the apply returned it, not as
  // the cache last saw it: a cached copy from before a template change would
  // still say every replica is updated, and the new generation would be called
  // rolled out before its rollout began.
  const status = computeStatus(app, deployment);
  let current: WebApp = app;
  if (app.spec.notify && isConditionTrue(status.conditions, "Ready")) {
    const notified = await runOneShot(ctx.client, app, {
      name: NOTIFY_ACTION,
      retry: "idempotent",
      discriminator: "first-ready",
      call: (key, signal) => notify(app, key, signal),
    });
    current = notified.object;
  }
  await updateStatusIfChanged(ctx.client, current, status);
}

/** Refuses to take over an object of the same name that this WebApp does not control. */
async function ensureControlled(
  ctx: ReconcileContext,
  app: WebApp,
  desired: KubeObject,
): Promise<void> {
  const type = { apiVersion: desired.apiVersion ?? "", kind: desired.kind ?? "" };
  const live = await ctx.reader
    .get(type, desired.metadata.name ?? "", desired.metadata.namespace)
    .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
  if (live && !isControlledBy(live, app)) {
    throw new TerminalError(
      `${desired.kind} ${desired.metadata.namespace}/${desired.metadata.name} exists and is not controlled by this WebApp; ` +
        "delete or rename it, or rename the WebApp",
      { reason: "NameConflict" },
    );
  }
}

/** POSTs the first-Ready notice; the body depends only on what the key names. */
async function notify(app: WebApp, key: string, signal: AbortSignal): Promise<string> {
  const url = app.spec.notify?.url ?? "";
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({
      event: "ready",
      webapp: { namespace: app.metadata.namespace, name: app.metadata.name, uid: app.metadata.uid },
    }),
    signal,
  });
  const text = await res.text();
  if (res.status >= 400 && res.status < 500 && res.status !== 409 && res.status !== 429) {
    throw new ActionRefusedError(`${url} answered ${res.status}: ${text.slice(0, 200)}`);
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 200)}`);
  return `${res.status} at ${urlOf(app)}`;
}
