/**
 * The ConfigMapSet controller: for each ConfigMapSet, a ConfigMap named after
 * the set in every namespace its `namespaceSelector` matches, controlled by the
 * set (so the garbage collector removes them with it), and none in the
 * namespaces it does not match.
 *
 * What wakes a set's key:
 * - the set itself (created, deleted, or its spec changed: `generationChanged`,
 *   so the controller's own status writes do not wake it again);
 * - any change to a ConfigMap it controls (`owns`: drift is put right);
 * - a namespace created, deleted, relabelled or terminating (`watches`: mapped
 *   to every set whose selector matches the namespace before or after).
 *
 * One reconcile reads everything from the cache, then:
 * 1. creates or updates the ConfigMap in each matching namespace, touching only
 *    the fields the set owns (configmap.ts) and writing nothing when they are
 *    already right;
 * 2. deletes the set's ConfigMaps from namespaces that no longer match;
 * 3. writes status (counts, `Ready`, `observedGeneration`) only when it changed.
 *
 * Errors: a selector the API cannot parse is a TerminalError (status says
 * why; a fix to the spec wakes the set). Retryable failures (5xx, conflicts,
 * timeouts) are thrown after the pass and retried with backoff. A ConfigMap of
 * the set's name owned by someone else is left alone, reported in `Ready`, and
 * looked at again after `FOREIGN_RECHECK_MS`.
 */
import {
  deepClone,
  type LabelSelector,
  labelSelectorFromMetav1,
  matchesLabels,
} from "@setpoint/api";
import {
  type BuilderOptions,
  type Controller,
  createOrUpdate,
  generationChanged,
  isAlreadyExists,
  isConflict,
  isControlledBy,
  isNotFound,
  isTransient,
  labelChanged,
  type Manager,
  or,
  type Predicate,
  type ReconcileContext,
  type Request,
  type Result,
  setStatusCondition,
  TerminalError,
  updateStatusIfChanged,
} from "@setpoint/runtime";
import { applyTemplate, ForeignConfigMapError, managedConfigMap, SET_LABEL } from "./configmap.ts";
import {
  type ConfigMap,
  ConfigMapKind,
  type ConfigMapSet,
  ConfigMapSetKind,
  type ConfigMapSetStatus,
  type Namespace,
  NamespaceKind,
} from "./types.ts";

/** The controller's name (also its field manager and Event source). */
export const CONTROLLER_NAME = "configmapset";
/**
 * What the controller caches of ConfigMaps: only those carrying `SET_LABEL`,
 * not every ConfigMap in the cluster. A reconcile's reads of ConfigMaps read
 * that informer without naming the scope: the reader defaults a watched kind
 * to the scope the controller watches it with.
 */
export const MANAGED_SCOPE = { labelSelector: SET_LABEL } as const;
/** How long a set blocked by a foreign ConfigMap waits before looking again (nothing wakes it otherwise). */
export const FOREIGN_RECHECK_MS = 30_000;
/** Most namespaces named in a condition message; the rest are counted. */
export const MESSAGE_NAMESPACES_MAX = 5;

/** The parsed selector of a set, or undefined when it does not parse. */
const selectors = new WeakMap<ConfigMapSet, LabelSelector | null>();
export function selectorOf(set: ConfigMapSet): LabelSelector | undefined {
  let sel = selectors.get(set);
  if (sel === undefined) {
    try {
      sel = labelSelectorFromMetav1(set.spec?.namespaceSelector);
    } catch {
      sel = null;
    }
    selectors.set(set, sel);
  }
  return sel ?? undefined;
}

/** A namespace being deleted: no new ConfigMaps go there, and it does not count. */
function terminating(ns: Namespace): boolean {
  return ns.metadata.deletionTimestamp !== undefined || ns.status?.phase === "Terminating";
}

/** Whether `set` wants its ConfigMap in `ns`. */
export function selects(set: ConfigMapSet, ns: Namespace): boolean {
  const sel = selectorOf(set);
  return sel !== undefined && !terminating(ns) && matchesLabels(sel, ns.metadata.labels);
}

/** Maps a namespace to the sets that select it (the builder calls it with the old and the new namespace). */
export function setsSelecting(sets: () => readonly ConfigMapSet[]): (ns: Namespace) => Request[] {
  return (ns) =>
    sets()
      .filter((s) => selects(s, ns))
      .map((s) => ({ name: s.metadata.name ?? "" }));
}

/** Namespace updates that can change what a set selects: labels, or the start of termination. */
const namespaceChanged: Predicate<Namespace> = or(labelChanged<Namespace>(), {
  update: (o, n) => terminating(o) !== terminating(n),
});

// #region register
/** Registers the controller with `mgr`. */
export function addConfigMapSetController(mgr: Manager, opts: BuilderOptions = {}): Controller {
  const sets = mgr.cache.informerFor(ConfigMapSetKind);
  return mgr
    .controller(CONTROLLER_NAME)
    .for(ConfigMapSetKind, { predicates: [generationChanged<ConfigMapSet>()] })
    .owns(ConfigMapKind, { scope: MANAGED_SCOPE })
    .watches(
      NamespaceKind,
      setsSelecting(() => sets.list()),
      { predicates: [namespaceChanged] },
    )
    .withOptions(opts)
    .complete(reconcileConfigMapSet);
}
// #endregion

/** What one pass over the namespaces found. */
interface Pass {
  matching: number;
  ready: number;
  foreign: string[];
  failed: { namespace: string; error: unknown }[];
}

// #region reconcile
/** Reconciles one ConfigMapSet (see the module doc). */
export async function reconcileConfigMapSet(
  req: Request,
  ctx: ReconcileContext,
): Promise<Result | undefined> {
  let set: ConfigMapSet;
  try {
    set = await ctx.reader.get(ConfigMapSetKind, req.name);
  } catch (e) {
    if (isNotFound(e)) return undefined; // deleted: its ConfigMaps go with it (ownerReferences)
    throw e;
  }
  if (set.metadata.deletionTimestamp) return undefined;

  const selector = selectorOf(set);
  if (!selector) {
    let message = "spec.namespaceSelector is not a valid label selector";
    try {
      labelSelectorFromMetav1(set.spec?.namespaceSelector);
    } catch (e) {
      message = `${message}: ${e instanceof Error ? e.message : String(e)}`;
    }
    await writeStatus(
      ctx,
      set,
      { matching: 0, ready: 0, foreign: [], failed: [] },
      {
        status: "False",
        reason: "InvalidSelector",
        message,
      },
    );
    throw new TerminalError(message, { reason: "InvalidSelector" });
  }
  // #endregion

  const namespaces = (await ctx.reader.list(NamespaceKind)).items;
  const pass: Pass = { matching: 0, ready: 0, foreign: [], failed: [] };
  for (const ns of namespaces) {
    const name = ns.metadata.name ?? "";
    try {
      if (selects(set, ns)) {
        pass.matching++;
        if (await ensureConfigMap(ctx, set, name)) pass.ready++;
        else pass.foreign.push(name);
      } else {
        await removeConfigMap(ctx, set, name);
      }
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      pass.failed.push({ namespace: name, error });
    }
  }

  const retryable = pass.failed.filter((f) => retryableError(f.error));
  if (retryable.length > 0) {
    // Try again soon; status is written by the pass that gets through.
    throw new Error(
      `ConfigMap writes failed in ${listNamespaces(retryable.map((f) => f.namespace))}: ${errorText(retryable[0].error)}`,
    );
  }
  await writeStatus(ctx, set, pass, readyCondition(set, pass));
  if (pass.failed.length > 0) {
    throw new Error(`ConfigMap writes failed: ${errorText(pass.failed[0].error)}`);
  }
  return pass.foreign.length > 0 ? { requeueAfter: FOREIGN_RECHECK_MS } : undefined;
}

// #region ensure
/**
 * Makes the ConfigMap in `namespace` as the set wants it. Returns false when a
 * ConfigMap of that name belongs to someone else.
 */
async function ensureConfigMap(
  ctx: ReconcileContext,
  set: ConfigMapSet,
  namespace: string,
): Promise<boolean> {
  const mutate = (cm: ConfigMap) => applyTemplate(set, cm);
  const desired = managedConfigMap(set, namespace);
  try {
    // The reader holds the ConfigMaps of the owns() watch: only labelled ones.
    await createOrUpdate(ctx.client, desired, mutate, { reader: ctx.reader });
    return true;
  } catch (e) {
    if (e instanceof ForeignConfigMapError) return false;
    if (!isAlreadyExists(e)) throw e;
  }
  // A ConfigMap of that name exists without our label (a user's, or ours with the
  // label removed by hand): the cache cannot see it, so read it from the server.
  try {
    await createOrUpdate(ctx.client, desired, mutate);
    return true;
  } catch (e) {
    if (e instanceof ForeignConfigMapError) return false;
    throw e;
  }
}
// #endregion

/** Deletes the set's ConfigMap from `namespace` if the set controls one there. */
async function removeConfigMap(
  ctx: ReconcileContext,
  set: ConfigMapSet,
  namespace: string,
): Promise<void> {
  const name = set.metadata.name ?? "";
  const cm = ctx.reader.peek(ConfigMapKind, name, namespace);
  if (!cm || !isControlledBy(cm, set)) return;
  try {
    await ctx.client.delete(ConfigMapKind, name, namespace, {
      preconditions: { uid: cm.metadata.uid },
    });
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}

interface ReadyCondition {
  status: "True" | "False";
  reason: string;
  message: string;
}

function readyCondition(set: ConfigMapSet, pass: Pass): ReadyCondition {
  const name = set.metadata.name ?? "";
  if (pass.failed.length > 0) {
    return {
      status: "False",
      reason: "ApplyFailed",
      message: `ConfigMap ${name} could not be written in ${listNamespaces(pass.failed.map((f) => f.namespace))}: ${errorText(pass.failed[0].error)}`,
    };
  }
  if (pass.foreign.length > 0) {
    return {
      status: "False",
      reason: "ConfigMapConflict",
      message: `a ConfigMap named ${name} that this set does not control exists in ${listNamespaces(pass.foreign)}`,
    };
  }
  return {
    status: "True",
    reason: "ConfigMapsReady",
    message: `${pass.ready} of ${pass.matching} matching namespaces have ConfigMap ${name}`,
  };
}

// #region status
/** Writes the status the pass implies, if it differs from the status the set has. */
async function writeStatus(
  ctx: ReconcileContext,
  set: ConfigMapSet,
  pass: Pass,
  ready: ReadyCondition,
): Promise<void> {
  const status: ConfigMapSetStatus = deepClone(set.status ?? {});
  status.observedGeneration = set.metadata.generation;
  status.matchingNamespaces = pass.matching;
  status.readyConfigMaps = pass.ready;
  const draft = { ...set, status };
  setStatusCondition(draft, { type: "Ready", ...ready });
  await updateStatusIfChanged(ctx.client, set, draft.status);
}
// #endregion

function retryableError(e: unknown): boolean {
  return isTransient(e) || isConflict(e) || isAlreadyExists(e) || isNotFound(e);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function listNamespaces(names: string[]): string {
  const shown = names.slice(0, MESSAGE_NAMESPACES_MAX).join(", ");
  const more = names.length - MESSAGE_NAMESPACES_MAX;
  return more > 0 ? `${shown} and ${more} more` : shown;
}
