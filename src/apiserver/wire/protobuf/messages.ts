/**
 * The protobuf messages of the built-in kinds, in one protobufjs Root: the
 * hand-written .proto files of this folder (meta/v1, runtime, the older core,
 * coordination, events, authentication and authorization kinds), and a message per
 * struct of the generated workload facts (src/registry/builtin/generated/
 * workload-types.json: field numbers and Go types from Kubernetes' types), so the
 * workload and RBAC kinds need no .proto of their own. Every kind also gets its
 * list message (`<Kind>List`: ListMeta 1, items 2, as in Kubernetes).
 *
 * Besides numbers and types, encoding as Kubernetes does needs the Go facts of
 * each field: whether it is a pointer (present even when zero), whether its JSON
 * has no `omitempty` (always written), whether it is an embedded struct (its
 * fields are the parent's in JSON, a nested message on the wire). Those come from
 * the generated facts, and for the hand-written messages from the lists below.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { apiVersionOf } from "@setpoint/api";
import protobuf, { type Field, type Type } from "protobufjs";
import { builtinDefinitions } from "../../../registry/builtin/index.ts";
import {
  type FieldFacts,
  type FieldType,
  WORKLOAD_ROOTS,
  WORKLOAD_TYPES,
} from "../../../registry/builtin/workloads/schemas.ts";

/** The hand-written message definitions loaded, in this folder. */
export const PROTO_FILES = [
  "runtime.proto",
  "meta.proto",
  "apimachinery.proto",
  "quantity.proto",
  "intstr.proto",
  "core.proto",
  "coordination.proto",
  "events.proto",
  "authentication.proto",
  "authorization.proto",
  "openapiv2.proto",
];

export const META = "k8s.io.apimachinery.pkg.apis.meta.v1";
export const TIME = `${META}.Time`;
export const MICRO_TIME = `${META}.MicroTime`;
export const FIELDS_V1 = `${META}.FieldsV1`;
export const QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity";
export const INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString";
export const RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension";
/** A user's extra values: a message of `items` in protobuf, a plain list in JSON. */
export const EXTRA_VALUE = "k8s.io.api.authorization.v1.ExtraValue";

/**
 * Fields of the hand-written messages that are pointers in the Go types: present
 * on the wire means present in JSON, even when zero. Other scalar fields are
 * `omitempty`: zero values are left out.
 */
const HAND_POINTER_FIELDS = [
  `${META}.DeleteOptions.gracePeriodSeconds`,
  `${META}.DeleteOptions.preconditions`,
  `${META}.DeleteOptions.orphanDependents`,
  `${META}.DeleteOptions.propagationPolicy`,
  `${META}.DeleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential`,
  `${META}.Preconditions.uid`,
  `${META}.Preconditions.resourceVersion`,
  `${META}.OwnerReference.controller`,
  `${META}.OwnerReference.blockOwnerDeletion`,
  `${META}.ObjectMeta.deletionGracePeriodSeconds`,
  `${META}.ObjectMeta.deletionTimestamp`,
  `${META}.ManagedFieldsEntry.time`,
  `${META}.ManagedFieldsEntry.fieldsV1`,
  `${META}.ListMeta.remainingItemCount`,
  `${META}.Status.details`,
  "k8s.io.api.core.v1.ConfigMap.immutable",
  "k8s.io.api.core.v1.Secret.immutable",
  "k8s.io.api.core.v1.ServiceAccount.automountServiceAccountToken",
  "k8s.io.api.core.v1.Event.series",
  "k8s.io.api.core.v1.Event.related",
  "k8s.io.api.events.v1.Event.series",
  "k8s.io.api.events.v1.Event.related",
  "k8s.io.api.coordination.v1.LeaseSpec.holderIdentity",
  "k8s.io.api.coordination.v1.LeaseSpec.leaseDurationSeconds",
  "k8s.io.api.coordination.v1.LeaseSpec.leaseTransitions",
  "k8s.io.api.coordination.v1.LeaseSpec.strategy",
  "k8s.io.api.coordination.v1.LeaseSpec.preferredHolder",
  "k8s.io.api.coordination.v1.LeaseSpec.acquireTime",
  "k8s.io.api.coordination.v1.LeaseSpec.renewTime",
  "k8s.io.api.authentication.v1.TokenRequestSpec.expirationSeconds",
  "k8s.io.api.authentication.v1.TokenRequestSpec.boundObjectRef",
];

/** Scalar fields of the hand-written messages without `omitempty`: always in the JSON. */
const HAND_ALWAYS_FIELDS = [
  `${META}.OwnerReference.apiVersion`,
  `${META}.OwnerReference.kind`,
  `${META}.OwnerReference.name`,
  `${META}.OwnerReference.uid`,
  `${META}.LabelSelectorRequirement.key`,
  `${META}.LabelSelectorRequirement.operator`,
  `${META}.Condition.type`,
  `${META}.Condition.status`,
  `${META}.Condition.reason`,
  `${META}.Condition.message`,
  "k8s.io.api.core.v1.NamespaceCondition.type",
  "k8s.io.api.core.v1.NamespaceCondition.status",
  "k8s.io.api.core.v1.Event.reportingComponent",
  "k8s.io.api.core.v1.Event.reportingInstance",
  "k8s.io.api.events.v1.EventSeries.count",
];

/** What encoding and decoding need to know of a field beyond its number and type. */
export interface FieldInfo {
  /** A Go pointer: present when set, even to zero; absent when nil. */
  pointer: boolean;
  /** No `omitempty`: a zero scalar is still written in JSON. */
  always: boolean;
  /** An embedded struct: in JSON its fields are the parent's. */
  inline: boolean;
  /**
   * Whether the Go field's pointer-ness is known (generated facts), so that a zero
   * value may be written for an absent non-pointer field as Go's encoder does.
   */
  known: boolean;
}

const NO_INFO: FieldInfo = { pointer: false, always: false, inline: false, known: false };

/** The protobuf name of a Kubernetes definition name (io.k8s.api.apps.v1.X → k8s.io.api.apps.v1.X). */
export function protobufName(definition: string): string {
  return definition.replace(/^io\.k8s\./, "k8s.io.");
}

/** Kubernetes' Go package (core, apps) → the group-version its kinds are served under. */
const GROUP_VERSION: Record<string, string> = {
  core: "v1",
  apps: "apps/v1",
  batch: "batch/v1",
  discovery: "discovery.k8s.io/v1",
  networking: "networking.k8s.io/v1",
  policy: "policy/v1",
  rbac: "rbac.authorization.k8s.io/v1",
  admissionregistration: "admissionregistration.k8s.io/v1",
};

interface Loaded {
  root: protobuf.Root;
  info: Map<Field, FieldInfo>;
  /** "apiVersion/kind" → message. */
  kinds: Map<string, Type>;
  /** Message full name → its list message. */
  lists: Map<string, Type>;
}

let loaded: Loaded | undefined;

function scalarOf(t: FieldType, where: string): string {
  switch (t.kind) {
    case "string":
    case "bool":
    case "int32":
    case "int64":
    case "double":
    case "float":
    case "bytes":
      return t.kind;
    case "ref":
      return `.${protobufName(t.ref ?? "")}`;
    case "meta":
      return `.${META}.${t.name}`;
    case "time":
      return `.${TIME}`;
    case "microTime":
      return `.${MICRO_TIME}`;
    case "quantity":
      return `.${QUANTITY}`;
    case "intOrString":
      return `.${INT_OR_STRING}`;
    case "raw":
      return `.${RAW_EXTENSION}`;
    default:
      throw new Error(`protobuf: no message type for ${t.kind} at ${where}`);
  }
}

/** Adds a message per generated struct (those not written by hand). */
function addGenerated(root: protobuf.Root, info: Map<Field, FieldInfo>): void {
  const pending: { field: Field; facts: FieldFacts }[] = [];
  for (const [definition, struct] of Object.entries(WORKLOAD_TYPES)) {
    const full = protobufName(definition);
    if (root.lookup(full)) continue;
    const dot = full.lastIndexOf(".");
    const type = new protobuf.Type(full.slice(dot + 1));
    for (const f of struct.fields) {
      const number = f.protobuf?.number;
      if (number === undefined) continue;
      const name = f.inline ? (f.protobuf?.name ?? `inline${number}`) : f.name;
      const where = `${full}.${name}`;
      let field: Field;
      if (f.type.kind === "map") {
        field = new protobuf.MapField(
          name,
          number,
          "string",
          scalarOf(f.type.values!, where),
        ) as unknown as Field;
      } else if (f.type.kind === "array") {
        field = new protobuf.Field(name, number, scalarOf(f.type.items!, where), "repeated");
      } else {
        field = new protobuf.Field(name, number, scalarOf(f.type, where), "optional");
      }
      type.add(field);
      pending.push({ field, facts: f });
    }
    root.define(full.slice(0, dot)).add(type);
  }
  for (const { field, facts } of pending) {
    info.set(field, {
      pointer: Boolean(facts.pointer),
      always: !facts.omitempty && !facts.pointer && !facts.inline,
      inline: Boolean(facts.inline),
      known: true,
    });
  }
}

function load(): Loaded {
  if (loaded) return loaded;
  // Beside this module in the sources; in ./protobuf/ beside the built bundle.
  const dir = [new URL("./", import.meta.url), new URL("./protobuf/", import.meta.url)]
    .map((u) => fileURLToPath(u))
    .find((d) => existsSync(join(d, "meta.proto")));
  if (!dir) throw new Error("protobuf: the .proto files are not found");
  const root = new protobuf.Root();
  root.loadSync(
    PROTO_FILES.map((f) => join(dir, f)),
    { keepCase: true },
  );
  const info = new Map<Field, FieldInfo>();
  addGenerated(root, info);
  root.resolveAll();
  const pointers = new Set(HAND_POINTER_FIELDS);
  const always = new Set(HAND_ALWAYS_FIELDS);
  const visit = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type) {
        for (const field of nested.fieldsArray) {
          if (info.has(field)) continue;
          const key = `${nested.fullName.slice(1)}.${field.name}`;
          info.set(field, {
            pointer: pointers.has(key),
            always: always.has(key),
            inline: false,
            known: false,
          });
        }
      }
      if (nested instanceof protobuf.Namespace) visit(nested);
    }
  };
  visit(root);

  const kinds = new Map<string, Type>();
  const lists = new Map<string, Type>();
  const messages = builtinDefinitions().flatMap((def) => [
    def,
    ...(def.createSubresources ?? []).map((s) => s.kind),
  ]);
  for (const def of messages) {
    if (!def.protobufMessage) continue;
    const type = root.lookupType(def.protobufMessage);
    for (const v of def.versions)
      kinds.set(`${apiVersionOf(def.group, v.name)}/${def.names.kind}`, type);
  }
  for (const definition of WORKLOAD_ROOTS) {
    // io.k8s.api.apps.v1.Deployment
    const parts = definition.split(".");
    const gv = GROUP_VERSION[parts[3]];
    const key = `${gv}/${parts[5]}`;
    if (gv && !kinds.has(key)) kinds.set(key, root.lookupType(protobufName(definition)));
  }
  // Every kind's list: ListMeta 1, items 2.
  for (const type of new Set(kinds.values())) {
    const parent = type.parent as protobuf.Namespace;
    const listName = `${type.name}List`;
    let list = parent.get(listName) as Type | null;
    if (!list) {
      list = new protobuf.Type(listName)
        .add(new protobuf.Field("metadata", 1, `.${META}.ListMeta`, "optional"))
        .add(new protobuf.Field("items", 2, type.fullName, "repeated"));
      parent.add(list);
      list.resolveAll();
      for (const field of list.fieldsArray) info.set(field, NO_INFO);
    }
    lists.set(type.fullName.slice(1), list);
  }
  loaded = { root, info, kinds, lists };
  return loaded;
}

/** The loaded Root (every message above). */
export function protobufRoot(): protobuf.Root {
  return load().root;
}

/** A message type by its full name ("openapi.v2.Document"). */
export function protobufType(name: string): Type {
  return load().root.lookupType(name);
}

/** What is known of a field (pointer, always, inline). */
export function fieldInfo(field: Field): FieldInfo {
  return load().info.get(field) ?? NO_INFO;
}

/** The message of a kind by apiVersion and kind ("apps/v1", "Deployment"). */
export function messageForKind(apiVersion: string, kind: string): Type | undefined {
  // DeleteOptions is registered in every group-version.
  if (kind === "DeleteOptions") return load().root.lookupType(`${META}.DeleteOptions`);
  return load().kinds.get(`${apiVersion}/${kind}`);
}

/** The list message of a kind's message. */
export function listMessageOf(type: Type): Type | undefined {
  return load().lists.get(type.fullName.replace(/^\./, ""));
}
