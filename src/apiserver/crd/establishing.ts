/**
 * Serving CustomResourceDefinitions: the CRD type itself is built in; a loop
 * follows CRD objects in storage and, for each, checks its names, serves (or stops
 * serving) its ResourceDefinition in the registry, and writes its status
 * (NamesAccepted, Established, acceptedNames). Discovery, OpenAPI and the watch
 * caches follow the registry.
 *
 * The loop is an ordinary client of the API for its writes: status goes through
 * `/status` (a JSON patch of the status alone, on condition that the CRD is still
 * the one read), and a CRD being deleted has its objects deleted one by one through
 * the normal delete path (their finalizers are honoured) before the loop removes
 * the `customresourcecleanup.apiextensions.k8s.io` finalizer, so the CRD goes
 * away, and stops serving it. While a CRD is terminating, creates of its objects
 * are refused.
 *
 * It reads CRDs through a resource store like every other reader: the CRD type's
 * watch cache to follow them and for the object a reconcile starts from (the one
 * the server kept from writing it, copied, when there is one: a CRD of megabytes
 * is not parsed again; its status write is conditional on its resourceVersion, so
 * a state the cache has not caught up with only means another look). At
 * start, the definitions of established CRDs are restored from that cache before
 * the server listens, so custom resources are served from the first request. A
 * CRD's definition is compiled again only when its generation moved (not for its
 * own status write), and other requests are served between the steps of a
 * reconcile, each tens of milliseconds for a CRD of megabytes.
 */
import http from "node:http";
import https from "node:https";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { KubeObject } from "@setpoint/api";
import { errors, StatusError } from "@setpoint/api";
import type { Logger } from "pino";
import { crdToDefinition } from "../../registry/crd/convert.ts";
import { CRD_CLEANUP_FINALIZER, customResourceDefinitions } from "../../registry/crd/definition.ts";
import { checkNames } from "../../registry/crd/names.ts";
import { type CrdCondition, type CrdStatus, crdSpec, crdStatus } from "../../registry/crd/types.ts";
import type { Registry } from "../../registry/registry.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { ResourceStore } from "../store/index.ts";
import type { CacheEvent, CacheWatcher } from "../watchcache/watch-cache.ts";

/** How long the loop waits before looking at a CRD again after a failure or while objects remain. */
export const CRD_RETRY_MS = 500;
/** Longest a loopback request may take. */
export const CRD_REQUEST_TIMEOUT_MS = 30_000;

/** What the loop's writes ask to be answered with: the written CRD's metadata alone. */
const WRITE_ANSWER = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/** Adds the CustomResourceDefinition type to `reg` unless it is there. */
export function installCrdType(reg: Registry): void {
  if (!reg.get(customResourceDefinitions.group, customResourceDefinitions.names.plural)) {
    reg.add(customResourceDefinitions);
  }
}

function parse(value: string | null): KubeObject | undefined {
  if (!value) return undefined;
  try {
    return JSON.parse(value) as KubeObject;
  } catch {
    return undefined;
  }
}

function isEstablished(crd: KubeObject): boolean {
  return (crdStatus(crd).conditions ?? []).some(
    (c) => c.type === "Established" && c.status === "True",
  );
}

/**
 * A resource store for CustomResourceDefinitions, as the server itself reads and
 * writes them (`name` scopes it to one).
 */
export type CrdStores = (name?: string) => ResourceStore;

/**
 * Serves the definitions of established CRDs (called at start, before the server
 * listens).
 */
export async function restoreCustomResources(
  crds: CrdStores,
  reg: Registry,
  logger?: Logger,
): Promise<void> {
  const cache = await crds().watchCache();
  for (const entry of cache.entries()) {
    const crd = parse(entry.json);
    if (!crd || !isEstablished(crd) || crd.metadata.deletionTimestamp) continue;
    try {
      reg.add(crdToDefinition(crd));
    } catch (err) {
      logger?.warn({ err, crd: crd.metadata.name }, "cannot serve custom resource definition");
    }
  }
}

export interface CrdControllerOptions {
  crds: CrdStores;
  registry: Registry;
  /** The server's own base URL (loopback). */
  url: string;
  /** Bearer token for loopback requests, when the server authenticates. */
  token?: string;
  logger?: Logger;
}

interface Served {
  group: string;
  plural: string;
  /** The CRD's metadata.generation the served definition was made from (unknown when restored). */
  generation?: number;
}

/** The loop that serves CRDs; start() it once the server listens. */
export class CrdController {
  readonly #opts: CrdControllerOptions;
  readonly #served = new Map<string, Served>();
  readonly #queue = new Set<string>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #watcher: CacheWatcher | undefined;
  #running = false;
  #stopped = false;
  #idle: Promise<void> = Promise.resolve();

  constructor(opts: CrdControllerOptions) {
    this.#opts = opts;
    for (const def of opts.registry.all()) {
      if (def.custom)
        this.#served.set(`${def.names.plural}.${def.group}`, {
          group: def.group,
          plural: def.names.plural,
        });
    }
  }

  /** Lists the CRDs, then follows their changes. */
  start(): void {
    void this.#follow();
  }

  /** Stops following and waits for the reconcile in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unwatch();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    await this.#idle;
  }

  /** Queues every CRD the cache holds and every one served, then each that changes. */
  async #follow(): Promise<void> {
    try {
      const cache = await this.#opts.crds().watchCache();
      if (this.#stopped) return;
      const name = (key: string) => key.slice(cache.prefix.length);
      const watcher: CacheWatcher = {
        startRev: cache.rev,
        deliver: (ev: CacheEvent) => this.#enqueue(name(ev.key)),
        flush: () => {},
        terminate: () => {
          // The cache restarts (its storage watch broke): follow it again.
          this.#unwatch();
          this.#retry(() => void this.#follow());
        },
      };
      this.#watcher = watcher;
      cache.addWatcher(watcher);
      for (const entry of cache.entries()) this.#enqueue(name(entry.key));
      for (const served of this.#served.keys()) this.#enqueue(served);
    } catch (err) {
      if (this.#stopped) return;
      this.#opts.logger?.warn({ err }, "custom resource definition cache failed; following again");
      this.#retry(() => void this.#follow());
    }
  }

  #unwatch(): void {
    const w = this.#watcher;
    if (!w) return;
    this.#watcher = undefined;
    void this.#opts
      .crds()
      .watchCache()
      .then((cache) => cache.removeWatcher(w))
      .catch(() => {});
  }

  #retry(run: () => void): void {
    if (this.#stopped) return;
    const t = setTimeout(() => {
      this.#timers.delete(t);
      run();
    }, CRD_RETRY_MS);
    this.#timers.add(t);
  }

  #enqueue(name: string): void {
    if (this.#stopped) return;
    this.#queue.add(name);
    if (this.#running) return;
    this.#running = true;
    this.#idle = this.#drain();
  }

  #later(name: string): void {
    this.#retry(() => this.#enqueue(name));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.size > 0 && !this.#stopped) {
        const name = this.#queue.values().next().value as string;
        this.#queue.delete(name);
        try {
          const again = await this.#reconcile(name);
          if (again) this.#later(name);
        } catch (err) {
          this.#opts.logger?.warn({ err, crd: name }, "custom resource definition sync failed");
          this.#later(name);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** Brings the registry and the CRD's status in line with the CRD; true to look again later. */
  async #reconcile(name: string): Promise<boolean> {
    const { crds, registry } = this.#opts;
    const crd = await crds(name)
      .getRecent()
      .catch((err: unknown) => {
        if (err instanceof StatusError && err.code === 404) return undefined;
        throw err;
      });
    if (!crd) {
      this.#unserve(name);
      return false;
    }
    if (crd.metadata.deletionTimestamp) return this.#finalize(name, crd);
    // A large CRD takes tens of milliseconds to read, to compile and to write back:
    // other requests are served between those steps.
    await nextTurn();
    const names = checkNames(registry, crd);
    const generation = crd.metadata.generation;
    if (!names.accepted) {
      this.#unserve(name);
    } else if (generation === undefined || this.#served.get(name)?.generation !== generation) {
      // Compiled again only when the spec moved (not for its own status write).
      const def = crdToDefinition(crd);
      registry.add(def);
      this.#served.set(name, { group: def.group, plural: def.names.plural, generation });
      await nextTurn();
    }
    await this.#writeStatus(crd, names.accepted, names.reason ?? "", names.message ?? "");
    return false;
  }

  #unserve(name: string): void {
    const served = this.#served.get(name);
    if (!served) return;
    this.#served.delete(name);
    this.#opts.registry.remove(served.group, served.plural);
  }

  async #writeStatus(
    crd: KubeObject,
    accepted: boolean,
    reason: string,
    message: string,
  ): Promise<void> {
    const status: CrdStatus = structuredClone(crdStatus(crd));
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    const conditions = [...(status.conditions ?? [])];
    const set = (c: CrdCondition) => {
      const i = conditions.findIndex((x) => x.type === c.type);
      const prev = i >= 0 ? conditions[i] : undefined;
      const next: CrdCondition = {
        ...c,
        lastTransitionTime:
          prev && prev.status === c.status ? (prev.lastTransitionTime ?? now) : now,
      };
      if (i >= 0) conditions[i] = next;
      else conditions.push(next);
    };
    set({ type: "NamesAccepted", status: accepted ? "True" : "False", reason, message });
    set(
      accepted
        ? {
            type: "Established",
            status: "True",
            reason: "InitialNamesAccepted",
            message: "the initial names have been accepted",
          }
        : {
            type: "Established",
            status: "False",
            reason: "NotAccepted",
            message: "not all names are accepted",
          },
    );
    const spec = crdSpec(crd);
    const next: CrdStatus = { ...status, conditions };
    if (accepted) {
      const n = spec.names ?? {};
      next.acceptedNames = {
        plural: n.plural,
        singular: n.singular || (n.kind ?? "").toLowerCase(),
        kind: n.kind,
        listKind: n.listKind || `${n.kind ?? ""}List`,
        ...(n.shortNames ? { shortNames: n.shortNames } : {}),
        ...(n.categories ? { categories: n.categories } : {}),
      };
    }
    const storage = (spec.versions ?? []).find((v) => v.storage)?.name;
    if (storage && !(next.storedVersions ?? []).includes(storage)) {
      next.storedVersions = [...(next.storedVersions ?? []), storage];
    }
    if (JSON.stringify(stripTimes(next)) === JSON.stringify(stripTimes(status))) return;
    // Only the status is sent (not the whole CRD, which may be megabytes), on
    // condition that the CRD is still the one read: a JSON patch whose test fails
    // when it changed meanwhile (the loop looks again then).
    const patch = [
      { op: "test", path: "/metadata/resourceVersion", value: crd.metadata.resourceVersion },
      { op: "add", path: "/status", value: next },
    ];
    await this.#request(
      "PATCH",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}/status`,
      patch,
    );
  }

  /** Deletes every object of a terminating CRD, then lets the CRD go. */
  async #finalize(name: string, crd: KubeObject): Promise<boolean> {
    const served = this.#served.get(name);
    const def = served ? this.#opts.registry.get(served.group, served.plural) : undefined;
    if (def && !(def as TerminatingDefinition).terminating) {
      this.#opts.registry.add(terminating(def));
    }
    if (def) {
      const version = def.versions.find((v) => v.storage) ?? def.versions[0];
      const base = `/apis/${def.group}/${version.name}`;
      const list = (await this.#request("GET", `${base}/${def.names.plural}`)) as {
        items?: KubeObject[];
      };
      const items = list.items ?? [];
      for (const item of items) {
        if (item.metadata.deletionTimestamp) continue;
        const ns = item.metadata.namespace;
        const path =
          def.namespaced && ns
            ? `${base}/namespaces/${ns}/${def.names.plural}`
            : `${base}/${def.names.plural}`;
        await this.#request("DELETE", `${path}/${item.metadata.name}`, undefined, [404]);
      }
      if (items.length > 0) return true;
    }
    const finalizers = crd.metadata.finalizers ?? [];
    if (finalizers.includes(CRD_CLEANUP_FINALIZER)) {
      const body = {
        ...crd,
        metadata: {
          ...crd.metadata,
          finalizers: finalizers.filter((f) => f !== CRD_CLEANUP_FINALIZER),
        },
      };
      await this.#request(
        "PUT",
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`,
        body,
        [404, 409],
      );
    }
    this.#unserve(name);
    return false;
  }

  #request(
    method: string,
    path: string,
    body?: unknown,
    tolerated: number[] = [],
  ): Promise<unknown> {
    const url = new URL(path, this.#opts.url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    // What a write answers is not looked at: only its metadata is asked for (not
    // the CRD again, which may be megabytes).
    const headers: Record<string, string> = {
      Accept: method === "GET" ? "application/json" : WRITE_ANSWER,
    };
    if (payload !== undefined) {
      headers["Content-Type"] =
        method === "PATCH" ? "application/json-patch+json" : "application/json";
    }
    if (this.#opts.token) headers.Authorization = `Bearer ${this.#opts.token}`;
    const mod = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(
        url,
        // Loopback to this very server, whose certificate names it: no need to verify it here.
        { method, headers, timeout: CRD_REQUEST_TIMEOUT_MS, rejectUnauthorized: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const code = res.statusCode ?? 0;
            // Only what a GET read is looked at: a written CRD is not decoded again.
            const text = () => Buffer.concat(chunks).toString("utf8");
            if (code >= 200 && code < 300) {
              const body = method === "GET" ? text() : "";
              resolve(body ? JSON.parse(body) : {});
            } else if (tolerated.includes(code)) {
              resolve({});
            } else {
              reject(new Error(`${method} ${path}: ${code} ${text().slice(0, 300)}`));
            }
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on("error", reject);
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
}

function stripTimes(s: CrdStatus): unknown {
  return { ...s, conditions: (s.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c) };
}

interface TerminatingDefinition extends ResourceDefinition {
  terminating?: boolean;
}

/** The definition of a terminating CRD: still served (reads, deletes), but refusing creates. */
function terminating(def: ResourceDefinition): ResourceDefinition {
  const next: TerminatingDefinition = {
    ...def,
    terminating: true,
    strategy: {
      ...def.strategy,
      prepareForCreate() {
        throw errors.methodNotAllowed(
          "create not allowed while custom resource definition is terminating",
        );
      },
    },
  };
  return next;
}
