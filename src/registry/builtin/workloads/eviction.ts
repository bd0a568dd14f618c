/**
 * policy/v1 Eviction and the Pod's `eviction` subresource (Kubernetes'
 * EvictionREST), what `kubectl drain` posts:
 *
 * The body is a policy/v1 Eviction (a policy/v1beta1 one is read as one).
 *
 * - a Pod that is Pending, Succeeded, Failed or already being deleted is
 *   deleted without asking a budget (a Pending one with a resourceVersion
 *   precondition, so it cannot become ready in between);
 * - otherwise the PodDisruptionBudgets of its namespace whose selector takes
 *   it are consulted: none, it goes; more than one, 500 "This pod has more
 *   than one PodDisruptionBudget, which the eviction subresource does not
 *   support."; one: a Pod that is not Ready goes without using the budget
 *   when the budget is healthy (or its unhealthyPodEvictionPolicy is
 *   AlwaysAllow); else the budget must allow a disruption (429 "Cannot evict
 *   pod as it would violate the pod's disruption budget." with a
 *   DisruptionBudget cause when it does not, or while its status is behind its
 *   spec), and the eviction takes one: disruptionsAllowed decremented and the
 *   Pod recorded in disruptedPods, written with the budget's resourceVersion
 *   as precondition and retried on conflict;
 * - then the Pod gets the DisruptionTarget condition (EvictionByEvictionAPI)
 *   and is deleted with the Eviction's deleteOptions (the request's dryRun
 *   joins them). The answer is 201 with a Success Status.
 */
import {
  errors,
  failure,
  type KubeObject,
  labelSelectorFromMetav1,
  type MetaV1LabelSelector,
  matchesLabels,
  nowTimestamp,
  type Status,
  type StatusError,
} from "@setpoint/api";
import type { CreateSubresource, SubresourceActions } from "../../types.ts";
import { workloadDefinition } from "./define.ts";

type Obj = Record<string, unknown>;

/** The policy/v1 Eviction kind, as the body of `pods/<name>/eviction`. */
export const evictionDefinition = workloadDefinition({
  group: "policy",
  kind: "Eviction",
  plural: "evictions",
  namespaced: true,
  status: false,
  generation: false,
  columns: [],
  verbs: ["create"],
});

/** Kubernetes' refusal of an eviction a budget does not allow. */
export const EVICTION_REFUSED_MESSAGE =
  "Cannot evict pod as it would violate the pod's disruption budget.";
/** Kubernetes' answer for a Pod several budgets select. */
export const MULTIPLE_BUDGETS_MESSAGE =
  "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
/** The status cause type of a refusal by a budget (policy/v1 DisruptionBudgetCause). */
export const DISRUPTION_BUDGET_CAUSE = "DisruptionBudget";
/** disruptedPods entries beyond which evictions are refused (Kubernetes' MaxDisruptedPodSize). */
export const MAX_DISRUPTED_POD_SIZE = 2000;
/** Attempts, and the pause between them, when a write loses a race (Kubernetes' EvictionsRetry). */
export const EVICTION_RETRY_STEPS = 20;
export const EVICTION_RETRY_MS = 500;

const PDB_GROUP = "policy";
const PDB_PLURAL = "poddisruptionbudgets";

interface Budget extends KubeObject {
  spec?: {
    selector?: MetaV1LabelSelector | null;
    unhealthyPodEvictionPolicy?: string;
  };
  status?: {
    observedGeneration?: number;
    disruptionsAllowed?: number;
    currentHealthy?: number;
    desiredHealthy?: number;
    expectedPods?: number;
    disruptedPods?: Record<string, string>;
    conditions?: Obj[];
  };
}

function isConflict(e: unknown): boolean {
  return (e as StatusError | undefined)?.status?.code === 409;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms * (0.95 + Math.random() * 0.1)));
}

/** Runs `fn` again while `retry(err)` says so, up to EVICTION_RETRY_STEPS times; `exhausted` when it gives up. */
async function retrying<T>(
  fn: () => Promise<T>,
  retry: (e: unknown) => boolean,
  exhausted?: () => StatusError,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!retry(e)) throw e;
      if (attempt >= EVICTION_RETRY_STEPS) throw exhausted ? exhausted() : e;
      await sleep(EVICTION_RETRY_MS);
    }
  }
}

function refused(retryAfterSeconds: number, cause: string): StatusError {
  return failure(429, "TooManyRequests", EVICTION_REFUSED_MESSAGE, {
    causes: [{ reason: DISRUPTION_BUDGET_CAUSE, message: cause }],
    ...(retryAfterSeconds > 0 ? { retryAfterSeconds } : {}),
  });
}

/** The refusal while the budget's status is behind (Kubernetes' createTooManyRequestsError). */
function stillProcessing(name: string): StatusError {
  return refused(10, `The disruption budget ${name} is still being processed by the server.`);
}

function phaseOf(pod: KubeObject): string {
  return String(((pod.status ?? {}) as Obj).phase ?? "");
}

function isReady(pod: KubeObject): boolean {
  const conditions = ((pod.status ?? {}) as Obj).conditions;
  return (
    Array.isArray(conditions) &&
    conditions.some((c) => (c as Obj).type === "Ready" && (c as Obj).status === "True")
  );
}

/** Finished, pending or terminating Pods are deleted without asking a budget. */
function canIgnoreBudget(pod: KubeObject): boolean {
  const phase = phaseOf(pod);
  return (
    phase === "Succeeded" ||
    phase === "Failed" ||
    phase === "Pending" ||
    Boolean(pod.metadata.deletionTimestamp)
  );
}

/** Whether the delete must not race the Pod becoming ready (not finished, not terminating). */
function shouldEnforceResourceVersion(pod: KubeObject): boolean {
  const phase = phaseOf(pod);
  return phase !== "Succeeded" && phase !== "Failed" && !pod.metadata.deletionTimestamp;
}

function preconditionsOf(o: Obj): Obj | undefined {
  const p = o.preconditions;
  return p && typeof p === "object" && !Array.isArray(p) ? (p as Obj) : undefined;
}

function resourceVersionUnset(o: Obj): boolean {
  const rv = preconditionsOf(o)?.resourceVersion;
  return rv === undefined || rv === null;
}

function withResourceVersion(o: Obj, rv: string | undefined): Obj {
  return { ...o, preconditions: { ...(preconditionsOf(o) ?? {}), resourceVersion: rv ?? "" } };
}

function dryRunValues(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  return v === undefined || v === null ? [] : [String(v)];
}

/** The Eviction's deleteOptions with the request's dryRun joined in (Kubernetes' propagateDryRun). */
function deleteOptionsOf(eviction: KubeObject, requestDryRun: boolean): Obj {
  const query = requestDryRun ? ["All"] : [];
  const raw = eviction.deleteOptions;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    return query.length > 0 ? { dryRun: query } : {};
  }
  const opts = { ...(raw as Obj) };
  const own = dryRunValues(opts.dryRun);
  if (own.length === 0) {
    if (query.length > 0) opts.dryRun = query;
    return opts;
  }
  if (query.length === 0) return opts;
  if (JSON.stringify(own) !== JSON.stringify(query)) {
    throw errors.internal(
      `Non-matching dry-run options in request and content: [${query.join(" ")}] and [${own.join(" ")}]`,
    );
  }
  return opts;
}

/** The budgets of the Pod's namespace whose selector takes it (an invalid one takes nothing). */
async function budgetsOf(pod: KubeObject, actions: SubresourceActions): Promise<Budget[]> {
  const all = (await actions.list(PDB_GROUP, PDB_PLURAL)) as Budget[];
  return all.filter((b) => {
    try {
      return matchesLabels(labelSelectorFromMetav1(b.spec?.selector), pod.metadata.labels);
    } catch {
      return false;
    }
  });
}

/** Sets the budget's DisruptionAllowed condition False (InsufficientPods), keeping its time if it was. */
function insufficient(conditions: Obj[] | undefined, now: Date): Obj[] {
  const out = (conditions ?? []).map((c) => ({ ...c }));
  const next: Obj = {
    type: "DisruptionAllowed",
    status: "False",
    reason: "InsufficientPods",
    message: "",
    lastTransitionTime: nowTimestamp(now),
  };
  const i = out.findIndex((c) => c.type === "DisruptionAllowed");
  if (i < 0) return [...out, next];
  if (out[i].status === "False") next.lastTransitionTime = out[i].lastTransitionTime;
  out[i] = next;
  return out;
}

/** Takes one disruption from the budget, or refuses (Kubernetes' checkAndDecrement). */
async function checkAndDecrement(
  pdb: Budget,
  podName: string,
  dryRun: boolean,
  actions: SubresourceActions,
): Promise<void> {
  const name = pdb.metadata.name ?? "";
  const status = pdb.status ?? {};
  if ((status.observedGeneration ?? 0) < (pdb.metadata.generation ?? 0)) {
    throw stillProcessing(name);
  }
  const allowed = status.disruptionsAllowed ?? 0;
  const subject = { group: PDB_GROUP, resource: "poddisruptionbudget", name };
  if (allowed < 0) throw errors.forbidden(subject, "pdb disruptions allowed is negative");
  if (Object.keys(status.disruptedPods ?? {}).length > MAX_DISRUPTED_POD_SIZE) {
    throw errors.forbidden(
      subject,
      "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
    );
  }
  if (allowed === 0) {
    throw refused(
      0,
      `The disruption budget ${name} needs ${status.desiredHealthy ?? 0} healthy pods and has ${status.currentHealthy ?? 0} currently`,
    );
  }
  if (dryRun) return;
  const now = new Date();
  const next: Budget = structuredClone(pdb);
  const s = { ...(next.status ?? {}) };
  s.disruptionsAllowed = allowed - 1;
  if (s.disruptionsAllowed === 0) s.conditions = insufficient(s.conditions, now);
  s.disruptedPods = { ...(s.disruptedPods ?? {}), [podName]: nowTimestamp(now) };
  next.status = s;
  // The budget's resourceVersion is the precondition: a concurrent eviction wins or loses whole.
  await actions.updateStatus(PDB_GROUP, PDB_PLURAL, next);
}

/** Sets DisruptionTarget=True (EvictionByEvictionAPI) on the Pod's status conditions, as UpdatePodCondition does. */
export function withDisruptionTarget(pod: KubeObject, now: Date): KubeObject {
  const status = (pod.status ?? {}) as Obj;
  const conditions = Array.isArray(status.conditions) ? (status.conditions as Obj[]) : [];
  const next: Obj = {
    type: "DisruptionTarget",
    status: "True",
    reason: "EvictionByEvictionAPI",
    message: "Eviction API: evicting",
    lastTransitionTime: nowTimestamp(now),
  };
  const i = conditions.findIndex((c) => c.type === "DisruptionTarget");
  if (i < 0) conditions.push(next);
  else {
    if (conditions[i].status === "True") next.lastTransitionTime = conditions[i].lastTransitionTime;
    conditions[i] = next;
  }
  status.conditions = conditions;
  pod.status = status;
  return pod;
}

/** Marks the Pod a disruption target, then deletes it with `options` (Kubernetes' addConditionAndDeletePod). */
async function markAndDelete(actions: SubresourceActions, options: Obj): Promise<void> {
  let opts = options;
  if (dryRunValues(options.dryRun).length === 0) {
    const pre = preconditionsOf(options);
    const updated = await actions.updateParentStatus((latest) => {
      const name = latest.metadata.name ?? "";
      const subject = { group: "", resource: "Pod", name };
      const uid = pre?.uid;
      if (typeof uid === "string" && uid !== "" && uid !== latest.metadata.uid) {
        throw errors.conflict(
          subject,
          `the UID in the precondition (${uid}) does not match the UID in record (${latest.metadata.uid ?? ""}). The object might have been deleted and then recreated`,
        );
      }
      const rv = pre?.resourceVersion;
      if (typeof rv === "string" && rv !== "" && rv !== latest.metadata.resourceVersion) {
        throw errors.conflict(
          subject,
          `the ResourceVersion in the precondition (${rv}) does not match the ResourceVersion in record (${latest.metadata.resourceVersion ?? ""}). The object might have been modified`,
        );
      }
      return withDisruptionTarget(latest, new Date());
    });
    // The condition was this eviction's own write: the precondition moves with it.
    if (!resourceVersionUnset(options)) {
      opts = withResourceVersion(options, updated.metadata.resourceVersion);
    }
  }
  await actions.deleteParent(opts);
}

/** Evicts the parent Pod as `eviction` asks; see the header. */
export async function evictPod(
  eviction: KubeObject,
  actions: SubresourceActions,
): Promise<Status | undefined> {
  const original = deleteOptionsOf(eviction, actions.dryRun);
  const dryRun = dryRunValues(original.dryRun).length > 0;

  // A Pod the budgets need not be asked about is deleted at once.
  let pod: KubeObject | undefined;
  let deleted = false;
  await retrying(
    async () => {
      pod = await actions.parent();
      if (!canIgnoreBudget(pod)) return;
      let opts = original;
      if (shouldEnforceResourceVersion(pod) && resourceVersionUnset(original)) {
        opts = withResourceVersion(original, pod.metadata.resourceVersion);
      }
      await markAndDelete(actions, opts);
      deleted = true;
    },
    (e) => isConflict(e) && resourceVersionUnset(original),
  );
  if (deleted || !pod) return undefined;
  const target = pod;

  const budgets = await budgetsOf(target, actions);
  if (budgets.length > 1) {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: MULTIPLE_BUDGETS_MESSAGE,
      code: 500,
    };
  }
  let pin = false;
  let budgetName = "";
  if (budgets.length === 1) {
    let pdb = budgets[0];
    budgetName = pdb.metadata.name ?? "";
    const s = pdb.status ?? {};
    const healthyBudget =
      (s.currentHealthy ?? 0) >= (s.desiredHealthy ?? 0) && (s.desiredHealthy ?? 0) > 0;
    if (
      !isReady(target) &&
      (pdb.spec?.unhealthyPodEvictionPolicy === "AlwaysAllow" || healthyBudget)
    ) {
      // An unhealthy Pod leaves without using the budget, if it does not become ready first.
      pin = true;
    } else {
      let refresh = false;
      await retrying(
        async () => {
          if (refresh) pdb = (await actions.get(PDB_GROUP, PDB_PLURAL, budgetName)) as Budget;
          refresh = true;
          await checkAndDecrement(pdb, target.metadata.name ?? "", dryRun, actions);
        },
        isConflict,
        () =>
          failure(
            504,
            "Timeout",
            `Timeout: couldn't update PodDisruptionBudget "${budgetName}" due to conflicts`,
            { retryAfterSeconds: 10 },
          ),
      );
    }
  }

  const opts = pin ? withResourceVersion(original, target.metadata.resourceVersion) : original;
  try {
    await markAndDelete(actions, opts);
  } catch (e) {
    // The Pod changed since it was judged unhealthy: the client should try again.
    if (isConflict(e) && pin && resourceVersionUnset(original)) throw stillProcessing(budgetName);
    throw e;
  }
  return undefined;
}

/** `pods/<name>/eviction`. */
export const podEvictionSubresource: CreateSubresource = {
  name: "eviction",
  kind: evictionDefinition,
  // Kubernetes reads a policy/v1beta1 Eviction too (same fields).
  alsoAccepts: ["policy/v1beta1"],
  act: evictPod,
};
