/**
 * The registry of resource types the apiserver serves: built-ins and custom
 * resources alike, looked up by URL parts or by kind. Discovery and OpenAPI are
 * derived from it; `generation` tells their caches when to rebuild.
 */
import { BUILTIN_GROUP_ORDER, type BuiltinOptions, builtinDefinitions } from "./builtin/index.ts";
import type { ResourceDefinition, VersionDefinition } from "./types.ts";

const KUBE_VERSION = /^v(\d+)(?:(alpha|beta)(\d+))?$/;

/**
 * Kubernetes' version priority: GA before beta before alpha, higher numbers first,
 * then any other version names alphabetically. Negative when `a` comes first.
 */
export function compareVersionPriority(a: string, b: string): number {
  const ma = KUBE_VERSION.exec(a);
  const mb = KUBE_VERSION.exec(b);
  if (ma && !mb) return -1;
  if (!ma && mb) return 1;
  if (!ma || !mb) return a < b ? -1 : a > b ? 1 : 0;
  const stage = (m: RegExpExecArray) => (m[2] === undefined ? 2 : m[2] === "beta" ? 1 : 0);
  if (stage(ma) !== stage(mb)) return stage(mb) - stage(ma);
  const major = Number(mb[1]) - Number(ma[1]);
  if (major !== 0) return major;
  return Number(mb[3] ?? 0) - Number(ma[3] ?? 0);
}

/** Orders groups: built-ins in Kubernetes' priority order, then the rest by name. */
export function compareGroups(a: string, b: string): number {
  const ia = BUILTIN_GROUP_ORDER.indexOf(a);
  const ib = BUILTIN_GROUP_ORDER.indexOf(b);
  if (ia >= 0 || ib >= 0) {
    if (ia < 0) return 1;
    if (ib < 0) return -1;
    return ia - ib;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function key(group: string, plural: string): string {
  return `${plural}.${group}`;
}

function checkDefinition(def: ResourceDefinition): void {
  const what = key(def.group, def.names.plural);
  if (!def.names.plural || !def.names.kind || !def.names.listKind || !def.names.singular) {
    throw new Error(`resource ${what}: plural, singular, kind and listKind are required`);
  }
  if (def.versions.length === 0) throw new Error(`resource ${what}: no versions`);
  const storage = def.versions.filter((v) => v.storage);
  if (storage.length !== 1) {
    throw new Error(
      `resource ${what}: exactly one storage version required, got ${storage.length}`,
    );
  }
  const names = new Set(def.versions.map((v) => v.name));
  if (names.size !== def.versions.length) throw new Error(`resource ${what}: duplicate versions`);
}

/** The resource types being served. */
export class Registry {
  readonly #defs = new Map<string, ResourceDefinition>();
  readonly #listeners = new Set<() => void>();
  #generation = 0;

  /** Bumped on every change (discovery/OpenAPI caches key on it). */
  get generation(): number {
    return this.#generation;
  }

  /** Adds a definition, replacing one with the same group and plural. Throws if malformed. */
  add(def: ResourceDefinition): void {
    checkDefinition(def);
    this.#defs.set(key(def.group, def.names.plural), def);
    this.#changed();
  }

  /** Removes a definition; no-op if absent. */
  remove(group: string, plural: string): void {
    if (this.#defs.delete(key(group, plural))) this.#changed();
  }

  get(group: string, plural: string): ResourceDefinition | undefined {
    return this.#defs.get(key(group, plural));
  }

  /** A served version of a resource, by URL parts. */
  lookup(
    group: string,
    version: string,
    plural: string,
  ): { def: ResourceDefinition; version: VersionDefinition } | undefined {
    const def = this.#defs.get(key(group, plural));
    const v = def?.versions.find((x) => x.name === version && x.served);
    return def && v ? { def, version: v } : undefined;
  }

  /** The definition of a kind in a group (case-sensitive kind). */
  byKind(group: string, kind: string): ResourceDefinition | undefined {
    for (const def of this.#defs.values()) {
      if (def.group === group && def.names.kind === kind) return def;
    }
    return undefined;
  }

  /** Every definition, grouped in discovery order. */
  all(): ResourceDefinition[] {
    return [...this.#defs.values()].sort((a, b) => compareGroups(a.group, b.group));
  }

  /** Served group-versions with the preferred (highest priority) version per group; core group "" first. */
  groups(): { group: string; versions: string[]; preferred: string }[] {
    const byGroup = new Map<string, Set<string>>();
    for (const def of this.#defs.values()) {
      for (const v of def.versions) {
        if (!v.served) continue;
        let set = byGroup.get(def.group);
        if (!set) {
          set = new Set();
          byGroup.set(def.group, set);
        }
        set.add(v.name);
      }
    }
    return [...byGroup.entries()]
      .sort(([a], [b]) => compareGroups(a, b))
      .map(([group, set]) => {
        const versions = [...set].sort(compareVersionPriority);
        return { group, versions, preferred: versions[0] };
      });
  }

  /** Definitions serving a group-version, in registration order. */
  inGroupVersion(
    group: string,
    version: string,
  ): { def: ResourceDefinition; version: VersionDefinition }[] {
    const out: { def: ResourceDefinition; version: VersionDefinition }[] = [];
    for (const def of this.#defs.values()) {
      if (def.group !== group) continue;
      const v = def.versions.find((x) => x.name === version && x.served);
      if (v) out.push({ def, version: v });
    }
    return out;
  }

  /** Calls `listener` after every change; returns a function that unsubscribes. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #changed(): void {
    this.#generation++;
    for (const l of [...this.#listeners]) {
      try {
        l();
      } catch (err) {
        // A failing listener must not stop the others or undo the change: report it.
        process.emitWarning(`registry change listener failed: ${String(err)}`);
      }
    }
  }
}

/** A registry with every built-in type registered. */
export function createBuiltinRegistry(opts: BuiltinOptions = {}): Registry {
  const reg = new Registry();
  for (const def of builtinDefinitions(opts)) reg.add(def);
  return reg;
}
