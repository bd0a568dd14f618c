/**
 * POST on a create subresource the definition carries out (Kubernetes' named
 * creaters with writes behind them): the body, an object of the subresource's
 * kind, is decoded, field-validated and validated by that kind's strategy; then
 *
 * - with `updateParent` (e.g. `pods/<name>/binding`) the parent is updated to
 *   what it makes of it straight in storage, as Kubernetes' BindingREST writes
 *   it: retried when a concurrent write wins, but with no field ownership
 *   recorded (a bound Pod's managedFields name no scheduler) and no admission
 *   or validation of the parent's update;
 * - with `act` (e.g. `pods/<name>/eviction`) the definition acts through
 *   SubresourceActions (./subresource-actions.ts) and says what to answer.
 *
 * The answer is a Status: 201 Success, as kube-apiserver answers, unless `act`
 * returns another.
 */
import { deepClone, errors, type KubeObject, type Status } from "@setpoint/api";
import { type CreateSubresource, storageVersion } from "../../registry/types.ts";
import type { RequestScope } from "./context.ts";
import { bindNamespace } from "./create.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondStatus } from "./respond.ts";
import { subresourceActions } from "./subresource-actions.ts";

/** The request body of a create subresource: decoded, defaulted and validated as its kind. */
async function readSubresourceBody(
  scope: RequestScope,
  sub: CreateSubresource,
): Promise<{ body: KubeObject; dryRun: boolean; manager: string }> {
  const kind = sub.kind;
  const version = storageVersion(kind);
  const bodyScope: RequestScope = {
    ...scope,
    def: kind,
    version,
    apiVersion: kind.group ? `${kind.group}/${version.name}` : version.name,
  };
  const mode = parseFieldValidation(bodyScope, "CreateOptions");
  const dryRun = parseDryRun(bodyScope, "CreateOptions");
  const manager = fieldManager(bodyScope, "CreateOptions");
  const body = await readObject(bodyScope, mode, sub.alsoAccepts ?? []);
  const name = scope.name ?? "";
  if ((body.metadata.name ?? "") !== name) {
    throw errors.badRequest(`name in URL does not match name in ${kind.names.kind} object`);
  }
  bindNamespace(bodyScope, body);
  kind.strategy.default?.(body);
  const causes = kind.strategy.validate?.(body, undefined) ?? [];
  if (causes.length > 0) throw errors.invalid(kind.names.kind, name, causes, kind.group);
  return { body, dryRun, manager };
}

/** Handles POST on a create subresource with `updateParent` or `act`; `scope` addresses the parent. */
export async function createUpdatingParent(
  scope: RequestScope,
  sub: CreateSubresource,
): Promise<void> {
  const { update, act } = { update: sub.updateParent, act: sub.act };
  if (!update && !act) throw errors.internal(`${sub.name} does not update its parent`);
  const { body, dryRun, manager } = await readSubresourceBody(scope, sub);
  let answer: Status | undefined;
  if (act) {
    answer = await act(body, subresourceActions(scope, { dryRun, manager }));
  } else if (update) {
    await scope.store.update(
      { dryRun, manager, allowCreate: false, storageOnly: true },
      (current) => {
        if (!current) throw errors.notFound(scope.subject);
        return update(body, deepClone(current), new Date());
      },
    );
  }
  respondStatus(
    scope,
    answer ?? { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 },
  );
}
