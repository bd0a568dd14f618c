/** core/v1 Namespace (cluster-scoped; subresources status and finalize). */
import { type KubeObject, nowTimestamp, type StatusCause } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { DeleteDecision, ResourceDefinition } from "../types.ts";
import { array, fieldObject, fieldString, object, str } from "./build.ts";
import { invalid, qualifiedNameErrors } from "./causes.ts";
import { kindSchema, time } from "./meta-schemas.ts";
import { CORE_V1 } from "./references.ts";

export const NAMESPACE_ACTIVE = "Active";
export const NAMESPACE_TERMINATING = "Terminating";
/** The finalizer the namespace controller removes once a namespace's content is gone. */
export const NAMESPACE_FINALIZER = "kubernetes";
/** Label every namespace carries with its own name (immutable, as in Kubernetes). */
export const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

/** Namespaces that may never be deleted. */
export const IMMORTAL_NAMESPACES: readonly string[] = ["default", "kube-system", "kube-public"];

/** Finalizer names valid without a "/" prefix. */
const STANDARD_FINALIZERS = new Set([NAMESPACE_FINALIZER, "orphan", "foregroundDeletion"]);

const namespaceSpecSchema = defineSchema(
  `${CORE_V1}.NamespaceSpec`,
  object(
    {
      finalizers: array(
        { type: "string" },
        "Finalizers is an opaque list of values that must be empty to permanently remove the namespace from storage.",
        { listType: "atomic" },
      ),
    },
    "NamespaceSpec describes the attributes on a Namespace.",
  ),
);

const namespaceConditionSchema = defineSchema(
  `${CORE_V1}.NamespaceCondition`,
  object(
    {
      lastTransitionTime: time("Last time the condition transitioned from one status to another."),
      message: str("Human-readable message indicating details about last transition."),
      reason: str("Unique, one-word, CamelCase reason for the condition's last transition."),
      status: str("Status of the condition, one of True, False, Unknown."),
      type: str("Type of namespace controller condition."),
    },
    "NamespaceCondition contains details about state of namespace.",
    ["type", "status"],
  ),
);

const namespaceStatusSchema = defineSchema(
  `${CORE_V1}.NamespaceStatus`,
  object(
    {
      conditions: array(
        refSchema(namespaceConditionSchema),
        "Represents the latest available observations of a namespace's current state.",
        { listType: "map", mapKeys: ["type"], patchMergeKey: "type", patchStrategy: "merge" },
      ),
      phase: str(
        'Phase is the current lifecycle phase of the namespace: "Active", or "Terminating" once deletion was requested.',
        { enum: [NAMESPACE_ACTIVE, NAMESPACE_TERMINATING] },
      ),
    },
    "NamespaceStatus is information about the current status of a Namespace.",
  ),
);

export const namespaceSchema = kindSchema(
  `${CORE_V1}.Namespace`,
  "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
  {
    spec: refSchema(namespaceSpecSchema, "Spec defines the behavior of the Namespace."),
    status: refSchema(namespaceStatusSchema, "Status describes the current status of a Namespace."),
  },
);

function ensureObject(obj: Record<string, unknown>, key: string): Record<string, unknown> {
  const cur = obj[key];
  if (typeof cur === "object" && cur !== null && !Array.isArray(cur)) {
    return cur as Record<string, unknown>;
  }
  const fresh: Record<string, unknown> = {};
  obj[key] = fresh;
  return fresh;
}

/** Defaults: status.phase Active, and the kubernetes.io/metadata.name label. */
function defaultNamespace(obj: KubeObject): void {
  const status = ensureObject(obj, "status");
  if (typeof status.phase !== "string" || status.phase === "") status.phase = NAMESPACE_ACTIVE;
  if (obj.metadata.name) {
    obj.metadata.labels = {
      ...(obj.metadata.labels ?? {}),
      [NAMESPACE_NAME_LABEL]: obj.metadata.name,
    };
  }
}

/** A new namespace is Active and carries the "kubernetes" finalizer. */
function prepareForCreate(obj: KubeObject): void {
  obj.status = { phase: NAMESPACE_ACTIVE };
  const spec = ensureObject(obj, "spec");
  const finalizers = Array.isArray(spec.finalizers) ? [...spec.finalizers] : [];
  if (!finalizers.includes(NAMESPACE_FINALIZER)) finalizers.push(NAMESPACE_FINALIZER);
  spec.finalizers = finalizers;
}

/** Main-resource updates keep spec.finalizers (only /finalize changes them) and status. */
function prepareForUpdate(obj: KubeObject, old: KubeObject): void {
  const oldFinalizers = fieldObject(old, "spec")?.finalizers;
  const spec = ensureObject(obj, "spec");
  if (oldFinalizers === undefined) delete spec.finalizers;
  else spec.finalizers = oldFinalizers;
  if (old.status === undefined) delete obj.status;
  else obj.status = old.status;
}

/** PUT /finalize: the request's spec.finalizers, everything else as an ordinary update. */
function finalizeUpdate(obj: KubeObject, old: KubeObject): KubeObject {
  const next: KubeObject = { ...obj };
  if (old.status === undefined) delete next.status;
  else next.status = old.status;
  return next;
}

/** spec.finalizers: a namespace being deleted stays until they are gone (emptied through /finalize). */
function specFinalizers(obj: KubeObject): string[] {
  const finalizers = fieldObject(obj, "spec")?.finalizers;
  return Array.isArray(finalizers) ? finalizers.map(String) : [];
}

/**
 * A namespace's first deletion marks it Terminating (deletionTimestamp set, no
 * grace period) and keeps it; later ones change nothing while spec.finalizers
 * remain, and otherwise follow the ordinary rules.
 */
function decideNamespaceDelete(
  obj: KubeObject,
  finalizers: string[],
  now: Date,
): DeleteDecision | undefined {
  if (!obj.metadata.deletionTimestamp) {
    if (finalizers.length > 0) obj.metadata.finalizers = finalizers;
    else delete obj.metadata.finalizers;
    obj.metadata.deletionTimestamp = nowTimestamp(now);
    const status = (obj.status ?? {}) as Record<string, unknown>;
    obj.status = { ...status, phase: NAMESPACE_TERMINATING };
    return { action: "update", obj };
  }
  if (specFinalizers(obj).length > 0) return { action: "noop" };
  return undefined;
}

function forbidNamespaceDelete(name: string): string | undefined {
  return IMMORTAL_NAMESPACES.includes(name) ? "this namespace may not be deleted" : undefined;
}

function validateNamespace(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const finalizers = fieldObject(obj, "spec")?.finalizers;
  if (Array.isArray(finalizers)) {
    finalizers.forEach((f, i) => {
      const name = String(f);
      const path = `spec.finalizers[${i}]`;
      for (const msg of qualifiedNameErrors(name)) causes.push(invalid(path, name, msg));
      if (!name.includes("/") && !STANDARD_FINALIZERS.has(name)) {
        causes.push(
          invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
          ),
        );
      }
    });
  }
  const phase = fieldString(obj, "status", "phase");
  if (old && phase !== fieldString(old, "status", "phase")) {
    const deleting = Boolean(obj.metadata.deletionTimestamp);
    if (!deleting && phase !== NAMESPACE_ACTIVE) {
      causes.push(
        invalid("status.phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"),
      );
    }
    if (deleting && phase !== NAMESPACE_TERMINATING) {
      causes.push(
        invalid(
          "status.phase",
          phase,
          "may only be 'Terminating' if `deletionTimestamp` is not empty",
        ),
      );
    }
  }
  return causes;
}

export const namespaceDefinition: ResourceDefinition = {
  group: "",
  names: {
    plural: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    listKind: "NamespaceList",
    shortNames: ["ns"],
    categories: [],
  },
  namespaced: false,
  custom: false,
  returnDeletedObject: true,
  strategicMergePatch: true,
  protobufMessage: "k8s.io.api.core.v1.Namespace",
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  subresources: [{ name: "finalize", verbs: ["update"], update: finalizeUpdate }],
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: namespaceSchema,
      statusSubresource: true,
      printerColumns: [
        {
          name: "Status",
          type: "string",
          priority: 0,
          description: "The current lifecycle phase of the namespace.",
          value: (obj) => fieldString(obj, "status", "phase"),
        },
      ],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    tracksGeneration: false,
    default: defaultNamespace,
    prepareForCreate,
    prepareForUpdate,
    validate: validateNamespace,
    nameRule: "label",
    pendingFinalizers: specFinalizers,
    decideDelete: decideNamespaceDelete,
    forbidDelete: forbidNamespaceDelete,
    selectableFields: { "status.phase": (obj) => fieldString(obj, "status", "phase") },
  },
};
