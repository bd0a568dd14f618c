/**
 * The AdmissionRequest of a write, as webhooks are sent it in an AdmissionReview
 * and as CEL expressions see it as `request`: kind and resource in the version
 * the object is given in, the requested ones, name, namespace, operation, the
 * caller, the objects, dry run and the options' kind.
 */
import type { AdmissionAttributes, StoreContext } from "../store/scope.ts";
import { convertToVersion } from "../wire/codec.ts";

export function admissionRequest(
  ctx: StoreContext,
  attrs: AdmissionAttributes,
  version: string,
  uid: string,
): Record<string, unknown> {
  const def = ctx.def;
  const sub = ctx.scope.subresource;
  const gvk = (v: string) => ({ group: def.group, version: v, kind: def.names.kind });
  const gvr = (v: string) => ({ group: def.group, version: v, resource: def.names.plural });
  const user = ctx.scope.user;
  const obj = attrs.object ?? attrs.oldObject;
  const options: Record<string, string> = {
    CREATE: "CreateOptions",
    UPDATE: "UpdateOptions",
    DELETE: "DeleteOptions",
  };
  return {
    uid,
    kind: gvk(version),
    resource: gvr(version),
    ...(sub ? { subResource: sub } : {}),
    requestKind: gvk(ctx.version.name),
    requestResource: gvr(ctx.version.name),
    ...(sub ? { requestSubResource: sub } : {}),
    name: obj?.metadata.name ?? ctx.scope.name ?? "",
    ...(ctx.scope.namespace ? { namespace: ctx.scope.namespace } : {}),
    operation: attrs.operation,
    userInfo: {
      username: user.name,
      ...((user as { uid?: string }).uid ? { uid: (user as { uid?: string }).uid } : {}),
      groups: user.groups,
    },
    object: attrs.object ? convertToVersion(attrs.object, def, version) : null,
    oldObject: attrs.oldObject ? convertToVersion(attrs.oldObject, def, version) : null,
    dryRun: attrs.dryRun,
    options: { kind: options[attrs.operation], apiVersion: "meta.k8s.io/v1" },
  };
}
