/**
 * SubresourceActions over the resource stores: what a create subresource's
 * `act` (e.g. `pods/<name>/eviction`) may do with its parent (read it, write
 * its status, delete it) and with other resources of its namespace (list, get,
 * write their status with a resourceVersion precondition). Every step is an
 * ordinary store call under the rules of every write; the request was
 * authorized as a whole, as Kubernetes' named creaters act for it.
 */
import { EVERYTHING, EVERYTHING_FIELDS, errors } from "@setpoint/api";
import { type SubresourceActions, storageVersion } from "../../registry/types.ts";
import { ResourceStore } from "../store/index.ts";
import type { RequestScope } from "./context.ts";
import { deleteOptionsFrom } from "./delete-options.ts";

/** The actions of a create subresource whose request is `scope` (addressing the parent). */
export function subresourceActions(
  scope: RequestScope,
  opts: { dryRun: boolean; manager: string },
): SubresourceActions {
  const { ctx, def, version, user } = scope;
  const namespace = scope.namespace;
  const name = scope.name ?? "";
  const store = (
    d = def,
    v = version,
    objName: string | undefined = name,
    subresource?: string,
  ): ResourceStore =>
    new ResourceStore(ctx, {
      definition: d,
      version: v,
      user,
      ...(d.namespaced && namespace !== undefined ? { namespace } : {}),
      ...(objName !== undefined ? { name: objName } : {}),
      ...(subresource !== undefined ? { subresource } : {}),
    });
  const other = (group: string, plural: string) => {
    const found = ctx.registry.get(group, plural);
    if (!found) throw errors.internal(`no resource ${plural}.${group} is served`);
    return found;
  };
  return {
    dryRun: opts.dryRun,
    parent: () => store().get(),
    async updateParentStatus(update) {
      const outcome = await store(def, version, name, "status").update(
        { dryRun: opts.dryRun, manager: opts.manager, allowCreate: false },
        (current) => {
          if (!current) throw errors.notFound(scope.subject);
          return update(structuredClone(current));
        },
      );
      return outcome.obj;
    },
    async deleteParent(options) {
      await store().delete(deleteOptionsFrom(options));
    },
    async list(group, plural) {
      const d = other(group, plural);
      const page = await store(d, storageVersion(d), undefined).list(
        { filtered: false, resourceVersion: "", limit: 0 },
        {
          ...(namespace !== undefined ? { namespace } : {}),
          labels: EVERYTHING,
          fields: EVERYTHING_FIELDS,
        },
        false,
        false,
      );
      return page.items;
    },
    get(group, plural, objName) {
      const d = other(group, plural);
      return store(d, storageVersion(d), objName).get();
    },
    async updateStatus(group, plural, obj) {
      const d = other(group, plural);
      const outcome = await store(d, storageVersion(d), obj.metadata.name ?? "", "status").update(
        { dryRun: opts.dryRun, manager: opts.manager, allowCreate: false },
        () => obj,
      );
      return outcome.obj;
    },
  };
}
