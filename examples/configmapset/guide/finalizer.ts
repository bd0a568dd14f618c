/**
 * The finalizer part of the runtime guide (docs/runtime.md quotes the regions
 * below; guide.test.ts runs the controller against a real apiserver): ConfigMaps
 * labelled `guide.setpoint.dev/audited=true` get a finalizer, and their deletion
 * is written to an `audit-log` ConfigMap before they are let go.
 */
import { deepClone } from "@setpoint/api";
import {
  addFinalizer,
  createOrUpdate,
  hasFinalizer,
  isBeingDeleted,
  isNotFound,
  type Manager,
  matching,
  type ReconcileContext,
  type Request,
  removeFinalizer,
} from "@setpoint/runtime";
import { type ConfigMap, ConfigMapKind } from "../types.ts";

export const AUDIT_LABEL = "guide.setpoint.dev/audited";
export const AUDIT_FINALIZER = "guide.setpoint.dev/audit";

// #region finalizer
export async function reconcileAudited(req: Request, ctx: ReconcileContext): Promise<void> {
  let cm: ConfigMap;
  try {
    cm = await ctx.reader.get(ConfigMapKind, req.name, req.namespace);
  } catch (e) {
    if (isNotFound(e)) return; // gone: nothing left to do
    throw e;
  }
  if (isBeingDeleted(cm)) {
    if (!hasFinalizer(cm, AUDIT_FINALIZER)) return;
    // Clean up first (idempotently: this may run again after a crash), then let go.
    await recordDeletion(ctx, cm);
    const next = deepClone(cm);
    removeFinalizer(next, AUDIT_FINALIZER);
    await ctx.client.update(next);
    return;
  }
  const next = deepClone(cm);
  if (addFinalizer(next, AUDIT_FINALIZER)) await ctx.client.update(next);
}

async function recordDeletion(ctx: ReconcileContext, cm: ConfigMap): Promise<void> {
  const log: ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "audit-log", namespace: cm.metadata.namespace },
  };
  await createOrUpdate(ctx.client, log, (obj) => {
    obj.data = { ...obj.data, [cm.metadata.name ?? ""]: `deleted (uid ${cm.metadata.uid})` };
  });
  ctx.recorder.normal(cm, "Audited", "deletion recorded in audit-log");
}
// #endregion

/** Registers the audit controller. */
export function addAuditController(mgr: Manager): void {
  // #region finalizer-register
  mgr
    .controller("audit")
    .for(ConfigMapKind, {
      predicates: [matching((cm) => cm.metadata.labels?.[AUDIT_LABEL] === "true")],
    })
    .withOptions({ finalizers: [AUDIT_FINALIZER] }) // published on the leader's Lease
    .complete(reconcileAudited);
  // #endregion
}
