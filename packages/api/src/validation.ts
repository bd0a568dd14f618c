/**
 * Name and metadata validation with Kubernetes' rules and wording. Checks return
 * `StatusCause[]` (empty when valid) whose `field` is a path like `metadata.name`
 * and whose `message` is the body of Kubernetes' field error, e.g.
 * `Invalid value: "Foo": a lowercase RFC 1123 subdomain must consist of ...`, so that
 * `errors.invalid(kind, name, causes)` reads exactly like the real apiserver.
 * Messages follow Kubernetes 1.32.
 */
import type { ObjectMeta, OwnerReference } from "./meta.ts";
import { CauseType, type StatusCause } from "./status.ts";

/** Longest DNS-1123 label (namespace names, most label-rule names). */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Longest DNS-1123 subdomain (most object names, label key prefixes). */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** Longest name part of a qualified name (label keys, annotation keys, finalizers). */
export const QUALIFIED_NAME_MAX_LENGTH = 63;
/** Longest label value. */
export const LABEL_VALUE_MAX_LENGTH = 63;
/** Largest total size of an object's annotations: keys plus values, in bytes (256 KiB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;
/** Number of random characters `generateName` appends. */
export const GENERATED_NAME_RANDOM_LENGTH = 5;
/** Longest generateName prefix kept; longer prefixes are cut so the result fits 63. */
export const MAX_GENERATED_NAME_PREFIX_LENGTH = 63 - GENERATED_NAME_RANDOM_LENGTH;

/** Which rule an object's name follows. Most types use "subdomain". */
export type NameRule = "subdomain" | "label" | "path-segment";

// ---------------------------------------------------------------------------
// Format checks: each returns the list of problems (empty when valid), worded as
// Kubernetes words them.

const DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT = `(${QUALIFIED_NAME_FMT})?`;
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

const dns1123LabelRe = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const dns1123SubdomainRe = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const qualifiedNameRe = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const labelValueRe = new RegExp(`^${LABEL_VALUE_FMT}$`);

function maxLenError(n: number): string {
  return `must be no more than ${n} characters`;
}

function regexError(msg: string, re: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${re}')`;
  const eg = examples.map((e) => `'${e}', `).join(" or ");
  return `${msg} (e.g. ${eg}regex used for validation is '${re}')`;
}

/** Problems with `s` as a DNS-1123 label (e.g. a namespace name). */
export function dns1123LabelErrors(s: string): string[] {
  const errs: string[] = [];
  if (s.length > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH));
  if (!dns1123LabelRe.test(s)) {
    if (dns1123SubdomainRe.test(s)) errs.push("must not contain dots");
    else errs.push(regexError(DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"));
  }
  return errs;
}

/** Problems with `s` as a DNS-1123 subdomain (most object names). */
export function dns1123SubdomainErrors(s: string): string[] {
  const errs: string[] = [];
  if (s.length > DNS1123_SUBDOMAIN_MAX_LENGTH) {
    errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH));
  }
  if (!dns1123SubdomainRe.test(s)) {
    errs.push(regexError(DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"));
  }
  return errs;
}

/**
 * Problems with `s` as a qualified name: an optional DNS subdomain prefix and "/",
 * then a name of at most 63 alphanumerics, '-', '_' or '.'. Label keys, annotation
 * keys and finalizers are qualified names.
 */
export function qualifiedNameErrors(s: string): string[] {
  const errs: string[] = [];
  const parts = s.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const prefix = parts[0];
    name = parts[1];
    if (prefix.length === 0) errs.push("prefix part must be non-empty");
    else for (const m of dns1123SubdomainErrors(prefix)) errs.push(`prefix part ${m}`);
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push("name part must be non-empty");
  else if (name.length > QUALIFIED_NAME_MAX_LENGTH) {
    errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH)}`);
  }
  if (!qualifiedNameRe.test(name)) {
    errs.push(
      `name part ${regexError(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")}`,
    );
  }
  return errs;
}

/** Problems with `s` as a label value: empty, or at most 63 qualified-name characters. */
export function labelValueErrors(s: string): string[] {
  const errs: string[] = [];
  if (s.length > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH));
  if (!labelValueRe.test(s)) {
    errs.push(regexError(LABEL_VALUE_MSG, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"));
  }
  return errs;
}

/**
 * Problems with `s` as a name that is one URL path segment: not "." or "..", and
 * no "/" or "%". With `prefix`, only the characters are checked (a generateName).
 */
export function pathSegmentNameErrors(s: string, prefix = false): string[] {
  if (!prefix && (s === "." || s === "..")) return [`may not be '${s}'`];
  const errs: string[] = [];
  for (const bad of ["/", "%"]) if (s.includes(bad)) errs.push(`may not contain '${bad}'`);
  return errs;
}

/** True if `s` is a valid DNS-1123 label (at most 63 of [a-z0-9-], alphanumeric ends). */
export function isDNS1123Label(s: string): boolean {
  return s.length <= DNS1123_LABEL_MAX_LENGTH && dns1123LabelRe.test(s);
}

/** True if `s` is a valid DNS-1123 subdomain (dot-separated labels, at most 253). */
export function isDNS1123Subdomain(s: string): boolean {
  return s.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && dns1123SubdomainRe.test(s);
}

/** True if `s` is a valid qualified name (label key, annotation key, finalizer). */
export function isQualifiedName(s: string): boolean {
  return qualifiedNameErrors(s).length === 0;
}

/** True if `s` is a valid label value. */
export function isValidLabelValue(s: string): boolean {
  return s.length <= LABEL_VALUE_MAX_LENGTH && labelValueRe.test(s);
}

/**
 * Problems with an object name under `rule`. With `prefix` the name is a
 * generateName: a trailing "-" is allowed, as Kubernetes allows it there.
 */
export function nameErrors(name: string, rule: NameRule = "subdomain", prefix = false): string[] {
  if (rule === "path-segment") return pathSegmentNameErrors(name, prefix);
  if (prefix) name = maskTrailingDash(name);
  return rule === "label" ? dns1123LabelErrors(name) : dns1123SubdomainErrors(name);
}

// Kubernetes validates a generateName by replacing its last two characters with
// "a" when it ends in "-", so "foo-" passes as "foa" would.
function maskTrailingDash(name: string): string {
  return name.length > 1 && name.endsWith("-") ? `${name.slice(0, -2)}a` : name;
}

// ---------------------------------------------------------------------------
// Field errors: StatusCauses worded as Kubernetes' field.Error bodies.

/** How Kubernetes renders a bad value inside "Invalid value: ...". */
export function renderBadValue(v: unknown): string {
  if (v === undefined || v === null) return "null";
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function withDetail(head: string, detail: string | undefined): string {
  return detail ? `${head}: ${detail}` : head;
}

/** Constructors for field causes, one per Kubernetes field error type. */
export const fieldErrors = {
  invalid(field: string, value: unknown, detail?: string): StatusCause {
    return {
      reason: CauseType.Invalid,
      message: withDetail(`Invalid value: ${renderBadValue(value)}`, detail),
      field,
    };
  },
  typeInvalid(field: string, value: unknown, detail?: string): StatusCause {
    return {
      reason: CauseType.TypeInvalid,
      message: withDetail(`Invalid value: ${renderBadValue(value)}`, detail),
      field,
    };
  },
  required(field: string, detail?: string): StatusCause {
    return { reason: CauseType.Required, message: withDetail("Required value", detail), field };
  },
  forbidden(field: string, detail?: string): StatusCause {
    return { reason: CauseType.Forbidden, message: withDetail("Forbidden", detail), field };
  },
  duplicate(field: string, value: unknown): StatusCause {
    return {
      reason: CauseType.Duplicate,
      message: `Duplicate value: ${renderBadValue(value)}`,
      field,
    };
  },
  notFound(field: string, value: unknown): StatusCause {
    return { reason: CauseType.NotFound, message: `Not found: ${renderBadValue(value)}`, field };
  },
  notSupported(field: string, value: unknown, supported: readonly string[]): StatusCause {
    const detail =
      supported.length > 0
        ? `supported values: ${supported.map((s) => JSON.stringify(s)).join(", ")}`
        : undefined;
    return {
      reason: CauseType.NotSupported,
      message: withDetail(`Unsupported value: ${renderBadValue(value)}`, detail),
      field,
    };
  },
  tooLong(field: string, maxLength: number): StatusCause {
    return {
      reason: CauseType.TooLong,
      message: `Too long: may not be more than ${maxLength} bytes`,
      field,
    };
  },
  tooMany(field: string, actual: number, max: number): StatusCause {
    return {
      reason: CauseType.TooMany,
      message: `Too many: ${actual}: must have at most ${max} items`,
      field,
    };
  },
};

// ---------------------------------------------------------------------------
// Object names and metadata.

/**
 * Validates an object name under `rule` (default "subdomain"); causes name
 * `field` (default `metadata.name`). An empty name is Required.
 */
export function validateObjectName(
  name: string,
  rule: NameRule = "subdomain",
  field = "metadata.name",
): StatusCause[] {
  if (!name) return [fieldErrors.required(field, "name or generateName is required")];
  return nameErrors(name, rule).map((m) => fieldErrors.invalid(field, name, m));
}

/** Validates a map of labels; every problem is reported at `field`, as Kubernetes does. */
export function validateLabels(labels: unknown, field = "metadata.labels"): StatusCause[] {
  if (labels === undefined || labels === null) return [];
  if (typeof labels !== "object" || Array.isArray(labels)) {
    return [fieldErrors.typeInvalid(field, labels, "must be an object of string values")];
  }
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    for (const m of qualifiedNameErrors(k)) causes.push(fieldErrors.invalid(field, k, m));
    if (typeof v !== "string") {
      causes.push(fieldErrors.typeInvalid(`${field}.${k}`, v, "must be a string"));
      continue;
    }
    for (const m of labelValueErrors(v)) causes.push(fieldErrors.invalid(field, v, m));
  }
  return causes;
}

/** Validates annotation keys (qualified names, case-insensitive) and their total size. */
export function validateAnnotations(
  annotations: unknown,
  field = "metadata.annotations",
): StatusCause[] {
  if (annotations === undefined || annotations === null) return [];
  if (typeof annotations !== "object" || Array.isArray(annotations)) {
    return [fieldErrors.typeInvalid(field, annotations, "must be an object of string values")];
  }
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations as Record<string, unknown>)) {
    for (const m of qualifiedNameErrors(k.toLowerCase())) {
      causes.push(fieldErrors.invalid(field, k, m));
    }
    if (typeof v !== "string") {
      causes.push(fieldErrors.typeInvalid(`${field}.${k}`, v, "must be a string"));
      continue;
    }
    size += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) {
    causes.push(fieldErrors.tooLong(field, TOTAL_ANNOTATION_SIZE_LIMIT));
  }
  return causes;
}

/** Validates owner references: apiVersion, kind, name and uid set; one controller at most. */
export function validateOwnerReferences(
  refs: unknown,
  field = "metadata.ownerReferences",
): StatusCause[] {
  if (refs === undefined || refs === null) return [];
  if (!Array.isArray(refs)) return [fieldErrors.typeInvalid(field, refs, "must be a list")];
  const causes: StatusCause[] = [];
  let firstController = "";
  for (const raw of refs as unknown[]) {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      causes.push(fieldErrors.typeInvalid(field, raw, "must be an object"));
      continue;
    }
    const ref = raw as Partial<OwnerReference>;
    const apiVersion = typeof ref.apiVersion === "string" ? ref.apiVersion : "";
    const version = apiVersion.includes("/")
      ? apiVersion.slice(apiVersion.indexOf("/") + 1)
      : apiVersion;
    if (!version) {
      causes.push(
        fieldErrors.invalid(`${field}.apiVersion`, apiVersion, "version must not be empty"),
      );
    }
    if (!ref.kind)
      causes.push(fieldErrors.invalid(`${field}.kind`, ref.kind ?? "", "kind must not be empty"));
    if (!ref.name)
      causes.push(fieldErrors.invalid(`${field}.name`, ref.name ?? "", "name must not be empty"));
    if (!ref.uid)
      causes.push(fieldErrors.invalid(`${field}.uid`, ref.uid ?? "", "uid must not be empty"));
    if (apiVersion === "v1" && ref.kind === "Event") {
      causes.push(
        fieldErrors.invalid(field, ref, "/v1, Kind=Event is disallowed from being an owner"),
      );
    }
    if (ref.controller === true) {
      const current = `${ref.kind ?? ""}/${ref.name ?? ""}`;
      if (firstController) {
        causes.push(
          fieldErrors.invalid(
            field,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`,
          ),
        );
      } else {
        firstController = current;
      }
    }
  }
  return causes;
}

/** The finalizer that asks the garbage collector to orphan dependents. */
export const FINALIZER_ORPHAN_DEPENDENTS = "orphan";
/** The finalizer that asks the garbage collector to delete dependents first. */
export const FINALIZER_DELETE_DEPENDENTS = "foregroundDeletion";

/** Validates finalizer names (qualified names); `orphan` and `foregroundDeletion` exclude each other. */
export function validateFinalizers(
  finalizers: unknown,
  field = "metadata.finalizers",
): StatusCause[] {
  if (finalizers === undefined || finalizers === null) return [];
  if (!Array.isArray(finalizers)) {
    return [fieldErrors.typeInvalid(field, finalizers, "must be a list of strings")];
  }
  const causes: StatusCause[] = [];
  for (const f of finalizers as unknown[]) {
    if (typeof f !== "string") {
      causes.push(fieldErrors.typeInvalid(field, f, "must be a string"));
      continue;
    }
    for (const m of qualifiedNameErrors(f)) causes.push(fieldErrors.invalid(field, f, m));
  }
  if (
    finalizers.includes(FINALIZER_ORPHAN_DEPENDENTS) &&
    finalizers.includes(FINALIZER_DELETE_DEPENDENTS)
  ) {
    causes.push(
      fieldErrors.invalid(
        field,
        finalizers,
        `finalizer ${FINALIZER_ORPHAN_DEPENDENTS} and ${FINALIZER_DELETE_DEPENDENTS} cannot be both set`,
      ),
    );
  }
  return causes;
}

/** Options of `validateObjectMeta`. */
export interface ObjectMetaValidationOptions {
  /** Whether the type is namespaced: then a namespace is required, otherwise forbidden. */
  namespaced: boolean;
  /** The rule the object's name follows (default "subdomain"). */
  nameRule?: NameRule | undefined;
}

/**
 * Validates an object's metadata on create, as Kubernetes' ValidateObjectMeta:
 * name (required unless generateName is set) and generateName against the name
 * rule; namespace required (a DNS label) iff namespaced; generation not negative;
 * labels, annotations, owner references and finalizers.
 */
export function validateObjectMeta(
  meta: ObjectMeta,
  opts: ObjectMetaValidationOptions,
): StatusCause[] {
  const rule = opts.nameRule ?? "subdomain";
  const causes: StatusCause[] = [];
  if (meta.generateName) {
    for (const m of nameErrors(meta.generateName, rule, true)) {
      causes.push(fieldErrors.invalid("metadata.generateName", meta.generateName, m));
    }
  }
  if (!meta.name) {
    if (!meta.generateName) {
      causes.push(fieldErrors.required("metadata.name", "name or generateName is required"));
    }
  } else {
    causes.push(...validateObjectName(meta.name, rule));
  }
  causes.push(...validateNamespaceField(meta.namespace, opts.namespaced));
  causes.push(...commonMetaCauses(meta));
  causes.push(...validateFinalizers(meta.finalizers));
  return causes;
}

function validateNamespaceField(ns: string | undefined, namespaced: boolean): StatusCause[] {
  if (namespaced) {
    if (!ns) return [fieldErrors.required("metadata.namespace")];
    return nameErrors(ns, "label").map((m) => fieldErrors.invalid("metadata.namespace", ns, m));
  }
  if (ns) return [fieldErrors.forbidden("metadata.namespace", "not allowed on this type")];
  return [];
}

function commonMetaCauses(meta: ObjectMeta): StatusCause[] {
  const causes: StatusCause[] = [];
  if (typeof meta.generation === "number" && meta.generation < 0) {
    causes.push(
      fieldErrors.invalid(
        "metadata.generation",
        meta.generation,
        "must be greater than or equal to 0",
      ),
    );
  }
  causes.push(...validateLabels(meta.labels));
  causes.push(...validateAnnotations(meta.annotations));
  causes.push(...validateOwnerReferences(meta.ownerReferences));
  return causes;
}

function immutable(field: string, next: unknown, old: unknown): StatusCause[] {
  return next === old ? [] : [fieldErrors.invalid(field, next ?? "", "field is immutable")];
}

/**
 * Validates metadata on update against the stored object, as Kubernetes'
 * ValidateObjectMetaUpdate: name and namespace may not change; uid,
 * creationTimestamp, deletionTimestamp and deletionGracePeriodSeconds may not
 * change (a value left out of `next` counts as unchanged: Kubernetes copies these
 * from the stored object before validating); no finalizer may be added once
 * deletionTimestamp is set; labels, annotations, owner references and finalizers
 * must be valid. Whether resourceVersion is required is the handler's decision
 * (unconditional updates), so it is not checked here.
 */
export function validateObjectMetaUpdate(next: ObjectMeta, old: ObjectMeta): StatusCause[] {
  const causes: StatusCause[] = [];
  if (old.deletionTimestamp) {
    const had = new Set(old.finalizers ?? []);
    const added = [...new Set((next.finalizers ?? []).filter((f) => !had.has(f)))].sort();
    if (added.length > 0) {
      const list = `[]string{${added.map((f) => JSON.stringify(f)).join(", ")}}`;
      causes.push(
        fieldErrors.forbidden(
          "metadata.finalizers",
          `no new finalizers can be added if the object is being deleted, found new finalizers ${list}`,
        ),
      );
    }
  }
  if (typeof next.generation === "number" && next.generation < 0) {
    causes.push(
      fieldErrors.invalid(
        "metadata.generation",
        next.generation,
        "must be greater than or equal to 0",
      ),
    );
  }
  causes.push(...immutable("metadata.name", next.name ?? "", old.name ?? ""));
  causes.push(...immutable("metadata.namespace", next.namespace ?? "", old.namespace ?? ""));
  const keep = <T>(v: T | undefined, o: T | undefined): T | undefined =>
    v === undefined || v === "" ? o : v;
  causes.push(...immutable("metadata.uid", keep(next.uid, old.uid), old.uid));
  causes.push(
    ...immutable(
      "metadata.creationTimestamp",
      keep(next.creationTimestamp, old.creationTimestamp),
      old.creationTimestamp,
    ),
  );
  causes.push(
    ...immutable(
      "metadata.deletionTimestamp",
      keep(next.deletionTimestamp, old.deletionTimestamp),
      old.deletionTimestamp,
    ),
  );
  causes.push(
    ...immutable(
      "metadata.deletionGracePeriodSeconds",
      keep(next.deletionGracePeriodSeconds, old.deletionGracePeriodSeconds),
      old.deletionGracePeriodSeconds,
    ),
  );
  causes.push(...validateLabels(next.labels));
  causes.push(...validateAnnotations(next.annotations));
  causes.push(...validateOwnerReferences(next.ownerReferences));
  causes.push(...validateFinalizers(next.finalizers));
  return causes;
}

// ---------------------------------------------------------------------------
// generateName

const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/**
 * A name made from a generateName prefix, as Kubernetes makes them: the prefix (cut
 * to 58 characters) followed by 5 random characters from "bcdfghjklmnpqrstvwxz2456789"
 * (no vowels, so no words; no 0/1/3 to avoid look-alikes).
 */
export function generateName(prefix: string): string {
  const base =
    prefix.length > MAX_GENERATED_NAME_PREFIX_LENGTH
      ? prefix.slice(0, MAX_GENERATED_NAME_PREFIX_LENGTH)
      : prefix;
  return base + randomSuffix(GENERATED_NAME_RANDOM_LENGTH);
}

function randomSuffix(n: number): string {
  const alphabet = NAME_ALPHABET.length;
  // Reject bytes at or above the largest multiple of the alphabet size: uniform draw.
  const limit = 256 - (256 % alphabet);
  let out = "";
  const buf = new Uint8Array(n * 2);
  while (out.length < n) {
    globalThis.crypto.getRandomValues(buf);
    for (const b of buf) {
      if (b < limit) out += NAME_ALPHABET[b % alphabet];
      if (out.length === n) break;
    }
  }
  return out;
}
