/**
 * The rules every write follows, as pure functions on objects: what create and
 * update reset or keep in metadata, the split between an object and its status
 * subresource, generation, defaulting and validation, and when an object being
 * deleted may finally go.
 */
import { randomUUID } from "node:crypto";
import {
  deepEqual,
  errors,
  generateName,
  type KubeObject,
  type NameRule,
  nowTimestamp,
  type StatusCause,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from "@setpoint/api";
import { applyDefaults as applySchemaDefaults } from "../../registry/defaulting.ts";
import { objectLimitsCause } from "../../registry/object-limits.ts";
import type { ResourceDefinition, VersionDefinition } from "../../registry/types.ts";
import type { StoreContext } from "./scope.ts";

/** The rule names of a type follow: its strategy's, else DNS subdomains. */
export function nameRule(def: ResourceDefinition): NameRule {
  return def.strategy.nameRule ?? "subdomain";
}

/**
 * Readies a decoded object for create, in place: server-owned metadata is reset
 * (uid, creationTimestamp, generation 1, no resourceVersion or deletion fields),
 * a generateName becomes a name, and `.status` is dropped when the version has a
 * status subresource; then the type's prepareForCreate hook runs.
 */
export function prepareCreate(
  obj: KubeObject,
  def: ResourceDefinition,
  version: VersionDefinition,
  now: Date,
): void {
  const meta = obj.metadata;
  delete meta.resourceVersion;
  delete meta.deletionTimestamp;
  delete meta.deletionGracePeriodSeconds;
  delete (meta as Record<string, unknown>).selfLink;
  meta.uid = randomUUID();
  meta.creationTimestamp = nowTimestamp(now);
  if (def.strategy.tracksGeneration) meta.generation = 1;
  else delete meta.generation;
  if (!meta.name && meta.generateName) meta.name = generateName(meta.generateName);
  if (version.statusSubresource) delete obj.status;
  def.strategy.prepareForCreate?.(obj);
}

/** Copies `old`'s value of `key` onto `next` (removing it when `old` has none). */
function keep(next: Record<string, unknown>, old: Record<string, unknown>, key: string): void {
  if (old[key] === undefined) delete next[key];
  else next[key] = old[key];
}

/**
 * Server-owned metadata an update cannot change, copied from the stored object:
 * uid (when left out), creationTimestamp, generation, and the deletion fields once set.
 */
function keepSystemMetadata(next: KubeObject, old: KubeObject): void {
  const m = next.metadata;
  const o = old.metadata;
  if (!m.uid) m.uid = o.uid;
  if (o.creationTimestamp) m.creationTimestamp = o.creationTimestamp;
  if (o.generation === undefined) delete m.generation;
  else m.generation = o.generation;
  if (o.deletionTimestamp) m.deletionTimestamp = o.deletionTimestamp;
  if (o.deletionGracePeriodSeconds !== undefined && m.deletionGracePeriodSeconds === undefined) {
    m.deletionGracePeriodSeconds = o.deletionGracePeriodSeconds;
  }
  delete (m as Record<string, unknown>).selfLink;
}

/**
 * Readies an update of the main resource, in place: `.status` is kept from the
 * stored object when the version has a status subresource, server-owned metadata
 * is kept, and the type's prepareForUpdate hook runs.
 */
export function prepareUpdate(
  next: KubeObject,
  old: KubeObject,
  def: ResourceDefinition,
  version: VersionDefinition,
): void {
  if (version.statusSubresource) keep(next, old, "status");
  keepSystemMetadata(next, old);
  def.strategy.prepareForUpdate?.(next, old);
}

/**
 * The object a status subresource write stores: the stored object with the
 * request's `.status`; everything else in the request (metadata included) is ignored.
 */
export function statusUpdate(body: KubeObject, old: KubeObject): KubeObject {
  const next: KubeObject = { ...old, metadata: { ...old.metadata } };
  keep(next, body, "status");
  return next;
}

/** The object without metadata and status: what generation tracks. */
function specPart(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

/**
 * Moves metadata.generation on when anything outside metadata and status changed
 * (types that track generation); a status write never moves it.
 */
export function bumpGeneration(
  next: KubeObject,
  old: KubeObject,
  def: ResourceDefinition,
  subresource: string | undefined,
): void {
  if (!def.strategy.tracksGeneration) return;
  const base = old.metadata.generation ?? 0;
  if (subresource === "status") {
    next.metadata.generation = old.metadata.generation ?? 1;
    return;
  }
  next.metadata.generation = deepEqual(specPart(next), specPart(old)) ? base || 1 : base + 1;
}

/**
 * Schema defaults (src/registry/defaulting.ts), then the type's own defaulting;
 * a strategy that applies its schema's defaults itself (ownSchemaDefaults: custom
 * resources, per the object's version) is left to do so.
 */
export function applyDefaults(
  obj: KubeObject,
  def: ResourceDefinition,
  version: VersionDefinition,
): void {
  if (!def.strategy.ownSchemaDefaults) applySchemaDefaults(obj, version.schema);
  def.strategy.default?.(obj);
}

function invalid(def: ResourceDefinition, obj: KubeObject, causes: StatusCause[]) {
  return errors.invalid(def.names.kind, obj.metadata.name ?? "", causes, def.group);
}

/**
 * 422 when an object to be written is nested too deeply or holds too many values
 * (src/registry/object-limits.ts): checked before field management, defaulting and
 * validation, whose walks over the object would otherwise do the work first.
 */
export function checkLimits(obj: unknown, def: ResourceDefinition): void {
  const cause = objectLimitsCause(obj);
  if (!cause) return;
  const name =
    typeof obj === "object" && obj !== null && "metadata" in obj
      ? ((obj as KubeObject).metadata?.name ?? "")
      : "";
  throw errors.invalid(def.names.kind, name, [cause], def.group);
}

/** 422 unless the new object's metadata and the type's rules accept it. */
export function validateCreate(obj: KubeObject, def: ResourceDefinition): void {
  const causes = [
    ...validateObjectMeta(obj.metadata, { namespaced: def.namespaced, nameRule: nameRule(def) }),
    ...(def.strategy.validate?.(obj, undefined) ?? []),
  ];
  if (causes.length > 0) throw invalid(def, obj, causes);
}

/** 422 unless the update is allowed from `old` to `next`. */
export function validateUpdate(next: KubeObject, old: KubeObject, def: ResourceDefinition): void {
  const causes = [
    ...validateObjectMetaUpdate(next.metadata, old.metadata),
    ...(def.strategy.validate?.(next, old) ?? []),
  ];
  if (causes.length > 0) throw invalid(def, next, causes);
}

/**
 * 403 when the type's strategy forbids this caller the write beyond its verb
 * (a role granting rules its writer does not hold).
 */
export function authorizeWrite(
  ctx: StoreContext,
  obj: KubeObject,
  old: KubeObject | undefined,
): void {
  const check = ctx.def.strategy.authorizeWrite;
  const authorizer = ctx.services.authorizer;
  if (!check || !authorizer) return;
  const reason = check(obj, old, ctx.scope.user, authorizer);
  if (reason) {
    throw errors.forbidden(
      { group: ctx.def.group, resource: ctx.def.names.plural, name: obj.metadata.name ?? "" },
      reason,
    );
  }
}

/**
 * Finalizers that keep an object from being removed: metadata.finalizers and
 * those its strategy adds (Namespaces also wait on spec.finalizers).
 */
export function pendingFinalizers(obj: KubeObject, def: ResourceDefinition): string[] {
  const out = [...(obj.metadata.finalizers ?? [])];
  const more = def.strategy.pendingFinalizers?.(obj);
  if (more) out.push(...more);
  return out;
}

/** Whether an object being deleted has no finalizers left, so a write removes it. */
export function readyToRemove(obj: KubeObject, def: ResourceDefinition): boolean {
  return Boolean(obj.metadata.deletionTimestamp) && pendingFinalizers(obj, def).length === 0;
}

/** Whether two objects are the same, apart from their resourceVersion. */
export function sameObject(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const { resourceVersion: _rv, ...meta } = o.metadata;
    return { ...o, metadata: meta };
  };
  return deepEqual(strip(a), strip(b));
}
