/**
 * POST on a create subresource that changes its parent (Kubernetes' named creater
 * with an update behind it, e.g. `pods/<name>/binding`): the body, an object of
 * the subresource's kind, is decoded, field-validated and validated by that kind's
 * strategy; the parent is then updated to what the definition's `updateParent`
 * makes of it, under the rules of every update of the parent (its validation,
 * field ownership, retried when a concurrent write wins). The answer is 201 with
 * a Success Status, as kube-apiserver answers.
 */
import { errors, type Status } from "@setpoint/api";
import { type CreateSubresource, storageVersion } from "../../registry/types.ts";
import type { RequestScope } from "./context.ts";
import { bindNamespace } from "./create.ts";
import { fieldManager, parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondStatus } from "./respond.ts";

/** Handles POST on a create subresource with `updateParent`; `scope` addresses the parent. */
export async function createUpdatingParent(
  scope: RequestScope,
  sub: CreateSubresource,
): Promise<void> {
  const update = sub.updateParent;
  if (!update) throw errors.internal(`${sub.name} does not update its parent`);
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
  const body = await readObject(bodyScope, mode);
  const name = scope.name ?? "";
  if ((body.metadata.name ?? "") !== name) {
    throw errors.badRequest(`name in URL does not match name in ${kind.names.kind} object`);
  }
  bindNamespace(bodyScope, body);
  kind.strategy.default?.(body);
  const causes = kind.strategy.validate?.(body, undefined) ?? [];
  if (causes.length > 0) throw errors.invalid(kind.names.kind, name, causes, kind.group);

  const opts = { dryRun, manager, allowCreate: false };
  await scope.store.update(opts, (current) => {
    if (!current) throw errors.notFound(scope.subject);
    return update(body, structuredClone(current), new Date());
  });
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    code: 201,
  };
  respondStatus(scope, status);
}
