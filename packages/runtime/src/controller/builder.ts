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
import type { KubeObject } from "@setpoint/api";
import type { InformerScope } from "../cache/cache.ts";
import type { Client, TypeRef } from "../client/client.ts";
import type { Kind } from "../client/kind.ts";
import type { Controller, ControllerOptions } from "./controller.ts";
import type { Predicate } from "./predicates.ts";
import type { RateLimiter } from "./rate-limiter.ts";
import type { Reconciler } from "./reconciler.ts";
import type { MapFn, WatchSpec } from "./watches.ts";

export type { MapFn, WatchSpec } from "./watches.ts";

/** How `for`, `owns` and `watches` watch a kind. */
export interface BuilderWatchOptions<T extends KubeObject> {
  predicates?: Predicate<T>[] | undefined;
  /** Watch only part of the kind (namespace, selectors, metadata only). */
  scope?: InformerScope | undefined;
}

export interface BuilderOptions {
  maxConcurrentReconciles?: number | undefined;
  reconcileTimeoutMs?: number | undefined;
  readYourWritesTimeoutMs?: number | undefined;
  rateLimiter?: RateLimiter | undefined;
  /** Finalizers the controller handles; the manager publishes them on its lease. */
  finalizers?: string[] | undefined;
  /**
   * The client the reconciler writes (and records Events) with, when this
   * controller acts as its own identity; default the manager's. Watches still
   * go through the manager's shared informers.
   */
  client?: Client | undefined;
}

/** What a finished declaration hands the manager: the controller's options but the cache. */
export type ControllerDeclaration = Omit<ControllerOptions, "client" | "cache"> & {
  client?: Client | undefined;
};

/**
 * Where a finished declaration goes: the manager registers the controller and
 * connects its watches to the shared informers.
 */
export interface ControllerRegistrar {
  addController(base: ControllerDeclaration, watches: WatchSpec[]): Controller;
}

export class ControllerBuilder {
  private forWatch: WatchSpec | undefined;
  private readonly watchList: WatchSpec[] = [];
  private readonly globalPredicates: Predicate<KubeObject>[] = [];
  private options: BuilderOptions = {};

  constructor(
    private readonly registrar: ControllerRegistrar,
    readonly name: string,
  ) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name)) {
      throw new Error(`controller name "${name}" must be a lowercase DNS-1123 name`);
    }
  }

  /** The kind this controller reconciles (exactly one). */
  for<U extends KubeObject>(type: Kind<U> | TypeRef, opts: BuilderWatchOptions<U> = {}): this {
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
  owns<U extends KubeObject>(type: Kind<U> | TypeRef, opts: BuilderWatchOptions<U> = {}): this {
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
    opts: BuilderWatchOptions<U> = {},
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

  /** Creates the controller and registers it (with the manager that made this builder). */
  complete(reconciler: Reconciler): Controller {
    const forWatch = this.forWatch;
    if (!forWatch) throw new Error(`controller ${this.name}: for() is required`);
    const watches = [forWatch, ...this.watchList].map((w) => ({
      ...w,
      predicates: [...this.globalPredicates, ...w.predicates],
      mapping:
        w.mapping.kind === "owner" ? { kind: "owner" as const, owner: forWatch.type } : w.mapping,
    }));
    const base: ControllerDeclaration = {
      name: this.name,
      reconciler,
      forType: forWatch.type,
      forScope: forWatch.scope,
      ...this.options,
    };
    return this.registrar.addController(base, watches);
  }
}
