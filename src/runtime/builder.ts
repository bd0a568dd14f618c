/**
 * The controller builder: declares what a controller reconciles and which
 * changes wake it, then binds it to a manager.
 *
 * ```ts
 * mgr.controller("configmapset")
 *   .for(ConfigMapSet, { predicates: [generationChanged()] })
 *   .owns(ConfigMap)
 *   .watches(Namespace, (ns) => setsSelecting(ns))
 *   .withOptions({ maxConcurrentReconciles: 4, finalizers: ["example.com/cleanup"] })
 *   .complete(reconcile);
 * ```
 *
 * - `for(kind)`: each object of the kind is a key; its create, update and
 *   delete enqueue its own `{namespace, name}`.
 * - `owns(kind)`: an event on an object of that kind enqueues its controlling
 *   owner, i.e. the ownerReference with `controller: true` whose group and kind
 *   are the `for` kind's (namespace: the dependent's, or none when the `for`
 *   kind is cluster-scoped). On update both the old and the new owner are enqueued.
 * - `watches(kind, map)`: an event enqueues whatever `map` returns (for updates,
 *   for the old and the new object).
 * - Predicates filter events per watch (`opts.predicates`) or for all watches
 *   (`withPredicates`). Keys from an informer's initial list and from resyncs go
 *   to the queue's low-priority lane; live events to the live lane.
 */
import { type KubeObject, parseApiVersion } from "../api/meta.ts";
import type { InformerScope } from "./cache.ts";
import type { TypeRef } from "./client.ts";
import type { Controller, ControllerOptions } from "./controller.ts";
import type { Manager } from "./manager.ts";
import { type Predicate, passes } from "./predicates.ts";
import type { RateLimiter } from "./ratelimiter.ts";
import { type Reconciler, type Request, requestFor } from "./reconciler.ts";
import type { Lane } from "./workqueue.ts";

/** A kind, carrying the TypeScript type of its objects. */
export interface Kind<T extends KubeObject = KubeObject> extends TypeRef {
  /** Type-level only; never set. */
  readonly __object?: T;
}

/** Declares a kind and the type of its objects: `kind<ConfigMap>("v1", "ConfigMap")`. */
export function kind<T extends KubeObject = KubeObject>(
  apiVersion: string,
  kindName: string,
): Kind<T> {
  return { apiVersion, kind: kindName };
}

export interface WatchOptions<T extends KubeObject> {
  predicates?: Predicate<T>[];
  /** Watch only part of the kind (namespace, selectors, metadata only). */
  scope?: InformerScope;
}

/** Maps an object of a watched kind to the requests it should wake. */
export type MapFn<T extends KubeObject> = (obj: T) => Request[] | Request | undefined;

export interface BuilderOptions {
  maxConcurrentReconciles?: number;
  reconcileTimeoutMs?: number;
  readYourWritesTimeoutMs?: number;
  rateLimiter?: RateLimiter;
  /** Finalizers the controller handles; the manager publishes them on its lease. */
  finalizers?: string[];
}

/** How one watch turns events into requests. */
export interface WatchSpec {
  type: TypeRef;
  scope?: InformerScope;
  predicates: Predicate<KubeObject>[];
  /** `for` maps to the object itself; `owns` to its controller; `map` through the function. */
  mapping:
    | { kind: "self" }
    | { kind: "owner"; owner: TypeRef }
    | { kind: "map"; fn: MapFn<KubeObject> };
}

export class ControllerBuilder {
  private forWatch: WatchSpec | undefined;
  private readonly watchList: WatchSpec[] = [];
  private readonly globalPredicates: Predicate<KubeObject>[] = [];
  private options: BuilderOptions = {};

  constructor(
    private readonly manager: Manager,
    readonly name: string,
  ) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
      throw new Error(`controller name "${name}" must be a lowercase DNS-1123 name`);
    }
  }

  /** The kind this controller reconciles (exactly one). */
  for<U extends KubeObject>(type: Kind<U> | TypeRef, opts: WatchOptions<U> = {}): this {
    if (this.forWatch) throw new Error(`controller ${this.name}: for() may be called only once`);
    this.forWatch = {
      type: { apiVersion: type.apiVersion, kind: type.kind },
      scope: opts.scope,
      predicates: (opts.predicates ?? []) as Predicate<KubeObject>[],
      mapping: { kind: "self" },
    };
    return this;
  }

  /** A kind whose objects this controller creates and controls (by ownerReference). */
  owns<U extends KubeObject>(type: Kind<U> | TypeRef, opts: WatchOptions<U> = {}): this {
    this.watchList.push({
      type: { apiVersion: type.apiVersion, kind: type.kind },
      scope: opts.scope,
      predicates: (opts.predicates ?? []) as Predicate<KubeObject>[],
      mapping: { kind: "owner", owner: { apiVersion: "", kind: "" } },
    });
    return this;
  }

  /** Any kind, mapped to requests by `map`. */
  watches<U extends KubeObject>(
    type: Kind<U> | TypeRef,
    map: MapFn<U>,
    opts: WatchOptions<U> = {},
  ): this {
    this.watchList.push({
      type: { apiVersion: type.apiVersion, kind: type.kind },
      scope: opts.scope,
      predicates: (opts.predicates ?? []) as Predicate<KubeObject>[],
      mapping: { kind: "map", fn: map as MapFn<KubeObject> },
    });
    return this;
  }

  /** Predicates applied to the events of every watch. */
  withPredicates(...preds: Predicate<KubeObject>[]): this {
    this.globalPredicates.push(...preds);
    return this;
  }

  withOptions(opts: BuilderOptions): this {
    this.options = { ...this.options, ...opts };
    return this;
  }

  /** Creates the controller and registers it with the manager. */
  complete(reconciler: Reconciler): Controller {
    const forWatch = this.forWatch;
    if (!forWatch) throw new Error(`controller ${this.name}: for() is required`);
    const watches = [forWatch, ...this.watchList].map((w) => ({
      ...w,
      predicates: [...this.globalPredicates, ...w.predicates],
      mapping:
        w.mapping.kind === "owner" ? { kind: "owner" as const, owner: forWatch.type } : w.mapping,
    }));
    const base: Omit<ControllerOptions, "client" | "cache"> = {
      name: this.name,
      reconciler,
      forType: forWatch.type,
      forScope: forWatch.scope,
      ...this.options,
    };
    return this.manager.addController(base, watches);
  }
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
