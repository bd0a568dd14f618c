/**
 * Objects whose controller has not caught up with their spec:
 * `status.observedGeneration` below `metadata.generation` for longer than a
 * threshold.
 *
 * "For how long" is measured from the object's last spec write: the newest
 * `time` among its managedFields entries that own fields outside metadata and
 * status and were not written through a subresource (a spec write moves
 * `generation` and stamps its writer's entry). A later metadata-only write by
 * the same manager also moves that time, which can only make the lag look
 * shorter, never longer. Without such an entry, the creation time is used.
 *
 * Only kinds whose controllers stamp observedGeneration are judged: a kind is
 * examined when at least one of its objects carries a numeric
 * `status.observedGeneration`; its objects without one count as never observed
 * (behind since their last spec write). Objects being deleted are left to the
 * deletion check.
 */
import type { KubeObject, ManagedFieldsEntry } from "@setpoint/api";
import { groupResource } from "@setpoint/runtime";
import { ageOf } from "./duration.ts";
import { type ObjectRef, objectRef } from "./resources.ts";
import type { ResourceObject } from "./stuck.ts";

/** An object behind its spec. */
export interface GenerationLag extends ObjectRef {
  generation: number;
  /** Absent when the controller never stamped one. */
  observedGeneration?: number;
  /** When the lag started: the last spec write (or creation). */
  since: string;
  /** Milliseconds since `since`. */
  behindForMs: number;
}

function observedGenerationOf(obj: KubeObject): number | undefined {
  const og = (obj.status as { observedGeneration?: unknown } | undefined)?.observedGeneration;
  return typeof og === "number" ? og : undefined;
}

/** Whether a managedFields entry records spec writes (fields outside metadata and status). */
function ownsSpec(e: ManagedFieldsEntry): boolean {
  if (e.subresource) return false;
  return Object.keys(e.fieldsV1 ?? {}).some((k) => k !== "f:metadata" && k !== "f:status");
}

/** The time of the last spec write of `obj` (see the module doc). */
export function lastSpecWrite(obj: KubeObject): string {
  let best = "";
  let bestMs = Number.NEGATIVE_INFINITY;
  for (const e of obj.metadata.managedFields ?? []) {
    if (!e.time || !ownsSpec(e)) continue;
    const t = Date.parse(e.time);
    if (t > bestMs) {
      bestMs = t;
      best = e.time;
    }
  }
  return best || (obj.metadata.creationTimestamp ?? "");
}

/** The objects behind their spec for at least `thresholdMs` at `now`, longest first. */
export function generationLags(
  items: Iterable<ResourceObject>,
  now: number,
  thresholdMs: number,
): GenerationLag[] {
  const all = [...items];
  const stamping = new Set<string>();
  for (const { resource, obj } of all) {
    if (observedGenerationOf(obj) !== undefined) stamping.add(groupResource(resource));
  }
  const out: GenerationLag[] = [];
  for (const { resource, obj } of all) {
    if (!stamping.has(groupResource(resource)) || obj.metadata.deletionTimestamp) continue;
    const generation = obj.metadata.generation;
    if (typeof generation !== "number") continue;
    const observed = observedGenerationOf(obj);
    if (observed !== undefined && observed >= generation) continue;
    const since = lastSpecWrite(obj);
    const behindForMs = ageOf(since, now);
    if (!(behindForMs >= thresholdMs)) continue;
    out.push({
      ...objectRef(resource, obj),
      generation,
      ...(observed !== undefined ? { observedGeneration: observed } : {}),
      since,
      behindForMs,
    });
  }
  return out.sort((a, b) => b.behindForMs - a.behindForMs);
}
