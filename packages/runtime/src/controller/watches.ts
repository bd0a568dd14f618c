/**
 * How a controller's watches turn informer events into requests: `self` (the
 * object's own key), `owner` (its controlling owner of the `for` kind) or `map`
 * (a function). Predicates filter each event; keys from an informer's initial
 * list and from resyncs go to the queue's low-priority lane, live events to
 * the live lane. The builder declares watches, the manager connects them.
 */
import { type KubeObject, parseApiVersion } from "@setpoint/api";
import type { InformerScope } from "../cache/cache.ts";
import type { TypeRef } from "../client/client.ts";
import type { Controller } from "./controller.ts";
import { type Predicate, passes } from "./predicates.ts";
import { type Request, requestFor } from "./reconciler.ts";
import type { Lane } from "./work-queue.ts";

/** Maps an object of a watched kind to the requests it should wake. */
export type MapFn<T extends KubeObject> = (obj: T) => Request[] | Request | undefined;

/** How one watch turns events into requests. */
export interface WatchSpec {
  type: TypeRef;
  scope?: InformerScope | undefined;
  predicates: Predicate<KubeObject>[];
  /** `for` maps to the object itself; `owns` to its controller; `map` through the function. */
  mapping:
    | { kind: "self" }
    | { kind: "owner"; owner: TypeRef }
    | { kind: "map"; fn: MapFn<KubeObject> };
}

/**
 * Connects one watch to a controller: registers an event handler on the shared
 * informer that maps events to requests and enqueues them. `ownerNamespaced`
 * tells whether the `for` kind is namespaced (for owner mapping); undefined
 * means "look it up on each event" (discovery may not know the kind yet).
 */
export function connectWatch(
  controller: Controller,
  spec: WatchSpec,
  informer: {
    addEventHandler(h: {
      onAdd?(obj: KubeObject, isInitialList: boolean): void;
      onUpdate?(oldObj: KubeObject, newObj: KubeObject, isResync: boolean): void;
      onDelete?(obj: KubeObject): void;
    }): () => void;
  },
  ownerNamespaced: () => boolean | undefined,
): () => void {
  const toRequests = mapper(spec, ownerNamespaced);
  const enqueue = (objs: KubeObject[], lane: Lane) => {
    const seen = new Set<string>();
    for (const o of objs) {
      for (const r of toRequests(o)) {
        const k = `${r.namespace ?? ""}/${r.name}`;
        if (seen.has(k)) continue;
        seen.add(k);
        controller.enqueue(r, lane);
      }
    }
  };
  const preds = spec.predicates;
  return informer.addEventHandler({
    onAdd: (obj, initial) => {
      if (passes(preds, "create", obj)) enqueue([obj], initial ? "initial" : "live");
    },
    onUpdate: (oldObj, newObj, resync) => {
      if (resync) {
        if (passes(preds, "generic", newObj)) enqueue([newObj], "initial");
      } else if (passes(preds, "update", newObj, oldObj)) {
        enqueue([oldObj, newObj], "live");
      }
    },
    onDelete: (obj) => {
      if (passes(preds, "delete", obj)) enqueue([obj], "live");
    },
  });
}

function asList(r: Request[] | Request | undefined): Request[] {
  if (!r) return [];
  return Array.isArray(r) ? r : [r];
}

function mapper(
  spec: WatchSpec,
  ownerNamespaced: () => boolean | undefined,
): (obj: KubeObject) => Request[] {
  const m = spec.mapping;
  switch (m.kind) {
    case "self":
      return (obj) => [requestFor(obj)];
    case "map":
      return (obj) => asList(m.fn(obj));
    case "owner": {
      const group = parseApiVersion(m.owner.apiVersion).group;
      return (obj) => {
        const ref = obj.metadata.ownerReferences?.find(
          (r) =>
            r.controller === true &&
            r.kind === m.owner.kind &&
            parseApiVersion(r.apiVersion).group === group,
        );
        if (!ref) return [];
        // Unknown scope: assume the owner lives beside its dependent (the common case).
        const namespaced = ownerNamespaced() ?? true;
        const req: Request = { name: ref.name };
        if (namespaced && obj.metadata.namespace) req.namespace = obj.metadata.namespace;
        return [req];
      };
    }
  }
}
