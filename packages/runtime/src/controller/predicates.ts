/**
 * Predicates filter the events a controller's watches turn into requests. Each
 * predicate may judge creates, updates, deletes and generic events (resyncs);
 * a missing method lets the event through. Predicates only save work: a
 * reconciler must stay correct when an event is filtered or delivered twice.
 */

import type { KubeObject } from "@setpoint/api";
import { deepEqual } from "@setpoint/api";

export interface Predicate<T extends KubeObject = KubeObject> {
  create?(obj: T): boolean;
  update?(oldObj: T, newObj: T): boolean;
  delete?(obj: T): boolean;
  /** Periodic resyncs and other events that are not a create, update or delete. */
  generic?(obj: T): boolean;
}

type EventKind = "create" | "update" | "delete" | "generic";

/** Runs one predicate on one event; a predicate without a method for the event passes it. */
export function evaluate<T extends KubeObject>(
  p: Predicate<T>,
  kind: EventKind,
  obj: T,
  oldObj?: T,
): boolean {
  switch (kind) {
    case "create":
      return p.create ? p.create(obj) : true;
    case "update":
      return p.update ? p.update(oldObj ?? obj, obj) : true;
    case "delete":
      return p.delete ? p.delete(obj) : true;
    case "generic":
      return p.generic ? p.generic(obj) : true;
  }
}

/** Whether every predicate passes the event (true for none). */
export function passes<T extends KubeObject>(
  preds: readonly Predicate<T>[],
  kind: EventKind,
  obj: T,
  oldObj?: T,
): boolean {
  for (const p of preds) if (!evaluate(p, kind, obj, oldObj)) return false;
  return true;
}

function onUpdate<T extends KubeObject>(changed: (o: T, n: T) => boolean): Predicate<T> {
  return { update: changed };
}

/** Updates pass only when `metadata.generation` moved (spec changed); status-only writes are skipped. */
export function generationChanged<T extends KubeObject = KubeObject>(): Predicate<T> {
  return onUpdate((o, n) => o.metadata.generation !== n.metadata.generation);
}

/** Updates pass only when the labels changed. */
export function labelChanged<T extends KubeObject = KubeObject>(): Predicate<T> {
  return onUpdate((o, n) => !deepEqual(o.metadata.labels ?? {}, n.metadata.labels ?? {}));
}

/** Updates pass only when the annotations changed. */
export function annotationChanged<T extends KubeObject = KubeObject>(): Predicate<T> {
  return onUpdate((o, n) => !deepEqual(o.metadata.annotations ?? {}, n.metadata.annotations ?? {}));
}

/** Updates pass only when the resourceVersion moved (filters resyncs, which repeat the same version). */
export function resourceVersionChanged<T extends KubeObject = KubeObject>(): Predicate<T> {
  return onUpdate((o, n) => o.metadata.resourceVersion !== n.metadata.resourceVersion);
}

/** Every event whose object satisfies `fn` (for updates: the new object). */
export function matching<T extends KubeObject = KubeObject>(fn: (obj: T) => boolean): Predicate<T> {
  return { create: fn, update: (_o, n) => fn(n), delete: fn, generic: fn };
}

function combine<T extends KubeObject>(preds: readonly Predicate<T>[], all: boolean): Predicate<T> {
  const test = (kind: EventKind, obj: T, oldObj?: T) =>
    all
      ? preds.every((p) => evaluate(p, kind, obj, oldObj))
      : preds.some((p) => evaluate(p, kind, obj, oldObj));
  return {
    create: (obj) => test("create", obj),
    update: (o, n) => test("update", n, o),
    delete: (obj) => test("delete", obj),
    generic: (obj) => test("generic", obj),
  };
}

/** Passes an event when every predicate passes it (true for none). */
export function and<T extends KubeObject = KubeObject>(...preds: Predicate<T>[]): Predicate<T> {
  return combine(preds, true);
}

/** Passes an event when any predicate passes it (false for none). */
export function or<T extends KubeObject = KubeObject>(...preds: Predicate<T>[]): Predicate<T> {
  return combine(preds, false);
}

/** Passes exactly the events `p` rejects. */
export function not<T extends KubeObject = KubeObject>(p: Predicate<T>): Predicate<T> {
  return {
    create: (obj) => !evaluate(p, "create", obj),
    update: (o, n) => !evaluate(p, "update", n, o),
    delete: (obj) => !evaluate(p, "delete", obj),
    generic: (obj) => !evaluate(p, "generic", obj),
  };
}
