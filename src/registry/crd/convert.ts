/**
 * From a stored CustomResourceDefinition to the ResourceDefinition the server
 * serves: names, scope, versions (schema with apiVersion/kind/metadata at the
 * root, status and scale subresources, printer columns, selectable fields) and
 * the custom resource strategy (defaults, schema validation, list-type
 * uniqueness and CEL rules).
 */
import { createHash } from "node:crypto";
import type { KubeObject, Schema, StatusCause } from "@setpoint/api";
import { CauseType, evaluateJsonPath, fieldErrors } from "@setpoint/api";
import {
  API_VERSION_DESCRIPTION,
  KIND_DESCRIPTION,
  objectMetaProperty,
} from "../builtin/meta-schemas.ts";
import { objectLimitsCause } from "../object-limits.ts";
import type { PrinterColumn, ResourceDefinition, VersionDefinition } from "../types.ts";
import { type CelNode, compileSchemaRules, validateRules } from "./cel/index.ts";
import { listTypeCauses } from "./list-types.ts";
import { isObject } from "./paths.ts";
import {
  applyDefaultsWith,
  type CompiledSchema,
  compileSchema,
  defaultsSkeleton,
  fillReadDefaults,
  SCHEMA_CACHE_SIZE,
  schemaCauses,
} from "./schema.ts";
import { type CrdVersion, crdSpec } from "./types.ts";

/** Schema failures that keep the CEL rules from running (Kubernetes' hasBlockingErr). */
const BLOCKING_CAUSES: ReadonlySet<string> = new Set([
  CauseType.NotSupported,
  CauseType.Required,
  CauseType.TooLong,
  CauseType.TooMany,
  CauseType.TypeInvalid,
]);

/** The cause that says the rules were not run. */
const RULES_NOT_CHECKED: StatusCause = fieldErrors.invalid(
  "",
  "null",
  "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
);

/** The schema of a version without one: anything goes (kept as it is). */
const OPEN_SCHEMA: Schema = { type: "object", "x-kubernetes-preserve-unknown-fields": true };

/** What the strategy of one served version validates with. */
interface VersionRuntime {
  structural: Schema;
  /** The parts of the schema defaulting reads (undefined: no defaults). */
  skeleton?: Schema | undefined;
  compiled: CompiledSchema;
  rules?: CelNode;
}

/** The user's root schema wrapped with apiVersion, kind and ObjectMeta, as served. */
export function servedSchema(structural: Schema): Schema {
  const props: Record<string, Schema> = { ...(structural.properties ?? {}) };
  props.apiVersion = { ...(props.apiVersion ?? { type: "string" }) };
  props.apiVersion.description ??= API_VERSION_DESCRIPTION;
  props.kind = { ...(props.kind ?? { type: "string" }) };
  props.kind.description ??= KIND_DESCRIPTION;
  props.metadata = objectMetaProperty();
  return { ...structural, type: "object", properties: props };
}

function cacheKey(crd: KubeObject, version: string, schema: Schema): string {
  const { uid, generation } = crd.metadata;
  if (uid && generation !== undefined) return `${uid}/${generation}/${version}`;
  const hash = createHash("sha1").update(JSON.stringify(schema)).digest("hex");
  return `${crd.metadata.name ?? ""}/${hash}/${version}`;
}

/** Read hooks by what they add, so that an unchanged hook keeps its identity. */
const readHooks = new Map<string, (obj: KubeObject) => void>();

/**
 * The hook that defaults custom resources read from storage: each object gets the
 * defaults of its own version's schema (the storage version's when its version is
 * unknown). Undefined when no version declares a default. The same function object
 * is returned for the same defaults, so that a changed hook means changed defaults.
 */
function readHook(
  skeletons: Map<string, Schema>,
  fallback: string,
): ((obj: KubeObject) => void) | undefined {
  if (skeletons.size === 0) return undefined;
  const signature = JSON.stringify([fallback, [...skeletons].sort(([a], [b]) => (a < b ? -1 : 1))]);
  const hit = readHooks.get(signature);
  if (hit) return hit;
  const hook = (obj: KubeObject): void => {
    const skeleton =
      skeletons.get(typeof obj.apiVersion === "string" ? obj.apiVersion : "") ??
      skeletons.get(fallback);
    if (skeleton) fillReadDefaults(obj, skeleton);
  };
  if (readHooks.size >= SCHEMA_CACHE_SIZE) {
    const oldest = readHooks.keys().next().value;
    if (oldest !== undefined) readHooks.delete(oldest);
  }
  readHooks.set(signature, hook);
  return hook;
}

function columns(v: CrdVersion): PrinterColumn[] {
  return (v.additionalPrinterColumns ?? []).map((c) => {
    const col: PrinterColumn = {
      name: c.name ?? "",
      type: c.type ?? "string",
      priority: c.priority ?? 0,
      jsonPath: c.jsonPath ?? "",
    };
    if (c.format) col.format = c.format;
    if (c.description) col.description = c.description;
    return col;
  });
}

function fieldValue(obj: KubeObject, path: string): string | undefined {
  try {
    const values = evaluateJsonPath(obj, path);
    const v = values[0];
    if (v === undefined || v === null) return undefined;
    return typeof v === "string" ? v : String(v);
  } catch {
    return undefined;
  }
}

/**
 * The ResourceDefinition of a CRD: custom, served through the same path as the
 * built-ins. Custom resources refuse an update without resourceVersion and track
 * generation; their strategy applies the schema's defaults and validates with the
 * schema and the CEL rules of the object's version.
 */
export function crdToDefinition(crd: KubeObject): ResourceDefinition {
  const spec = crdSpec(crd);
  const group = spec.group ?? "";
  const names = spec.names ?? {};
  const kind = names.kind ?? "";
  const runtimes = new Map<string, VersionRuntime>();
  const versions: VersionDefinition[] = (spec.versions ?? []).map((v) => {
    const name = v.name ?? "";
    const structural = v.schema?.openAPIV3Schema ?? OPEN_SCHEMA;
    const compiled = compileSchema(structural, cacheKey(crd, name, structural));
    const rules = compileSchemaRules(structural).root;
    runtimes.set(`${group}/${name}`, { structural, compiled, rules });
    const def: VersionDefinition = {
      name,
      served: v.served === true,
      storage: v.storage === true,
      schema: servedSchema(structural),
      statusSubresource: isObject(v.subresources?.status),
      printerColumns: columns(v),
    };
    if (v.deprecated) def.deprecated = true;
    if (v.deprecationWarning !== undefined) def.deprecationWarning = v.deprecationWarning;
    const scale = v.subresources?.scale;
    if (scale?.specReplicasPath && scale.statusReplicasPath) {
      def.scale = {
        specReplicasPath: scale.specReplicasPath,
        statusReplicasPath: scale.statusReplicasPath,
      };
      if (scale.labelSelectorPath) def.scale.labelSelectorPath = scale.labelSelectorPath;
    }
    return def;
  });
  const storage = versions.find((v) => v.storage)?.name ?? versions[0]?.name ?? "";
  const runtimeOf = (obj: KubeObject): VersionRuntime | undefined =>
    runtimes.get(obj.apiVersion ?? "") ?? runtimes.get(`${group}/${storage}`);
  const skeletons = new Map<string, Schema>();
  for (const [apiVersion, rt] of runtimes) {
    const skeleton = defaultsSkeleton(rt.structural);
    rt.skeleton = skeleton;
    if (skeleton) skeletons.set(apiVersion, skeleton);
  }
  const onRead = readHook(skeletons, `${group}/${storage}`);

  const selectable: Record<string, (obj: KubeObject) => string | undefined> = {};
  for (const v of spec.versions ?? []) {
    for (const f of v.selectableFields ?? []) {
      if (!f.jsonPath) continue;
      const path = f.jsonPath;
      selectable[path.replace(/^\./, "")] = (obj) => fieldValue(obj, path);
    }
  }

  return {
    group,
    names: {
      plural: names.plural ?? "",
      singular: names.singular || kind.toLowerCase(),
      kind,
      listKind: names.listKind || `${kind}List`,
      shortNames: [...(names.shortNames ?? [])],
      categories: [...(names.categories ?? [])],
    },
    namespaced: (spec.scope ?? "Namespaced") === "Namespaced",
    custom: true,
    typed: false,
    returnDeletedObject: true,
    versions,
    strategy: {
      ownSchemaDefaults: true,
      allowUnconditionalUpdate: false,
      tracksGeneration: true,
      selectableFields: Object.keys(selectable).length > 0 ? selectable : undefined,
      ...(onRead ? { onRead } : {}),
      default(obj: KubeObject): void {
        const rt = runtimeOf(obj);
        if (rt) applyDefaultsWith(obj, rt.structural, rt.skeleton);
      },
      validate(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
        const rt = runtimeOf(obj);
        if (!rt) return [];
        // Objects past the size limits are refused before any validation work.
        const tooBig = objectLimitsCause(obj);
        if (tooBig) return [tooBig];
        const causes = schemaCauses(obj, rt.compiled);
        causes.push(...listTypeCauses(obj, rt.structural));
        if (!rt.rules) return causes;
        // As in Kubernetes, rules are not run on an object the schema already found
        // broken in a way they might trip over (missing, mistyped, too large, unknown).
        if (causes.some((c) => BLOCKING_CAUSES.has(c.reason ?? ""))) {
          causes.push(RULES_NOT_CHECKED);
          return causes;
        }
        causes.push(...validateRules(obj, old, rt.rules));
        return causes;
      },
    },
  };
}
