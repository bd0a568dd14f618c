/**
 * DeleteOptions of a request, from the body or else the query, parsed and
 * validated as Kubernetes reads them (what they mean for an object is decided
 * in src/apiserver/store/delete-decision.ts).
 */
import { errors, fieldErrors, type StatusCause } from "@setpoint/api";
import type { DeleteOptions, PropagationPolicy } from "../store/delete-decision.ts";
import { decodeJson, decodeYaml } from "../wire/decode.ts";
import type { MediaType } from "../wire/media-type.ts";
import { decodeProtobufObject, isProtobufContentType } from "../wire/protobuf/index.ts";
import { parseGoBool, type Query } from "./request.ts";

export type { DeleteOptions, PropagationPolicy } from "../store/delete-decision.ts";

const POLICIES = ["Foreground", "Background", "Orphan"];

function invalidOptions(causes: StatusCause[]) {
  return errors.invalid("DeleteOptions", "", causes, "meta.k8s.io");
}

function validate(raw: Record<string, unknown>): DeleteOptions {
  const causes: StatusCause[] = [];
  const out: DeleteOptions = { dryRun: false };
  const grace = raw.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) {
    if (typeof grace !== "number" || !Number.isInteger(grace)) {
      throw errors.badRequest("json: cannot unmarshal gracePeriodSeconds into an integer");
    }
    out.gracePeriodSeconds = grace;
  }
  const orphan = raw.orphanDependents;
  if (orphan !== undefined && orphan !== null) {
    if (typeof orphan !== "boolean") {
      throw errors.badRequest("json: cannot unmarshal orphanDependents into a boolean");
    }
    out.orphanDependents = orphan;
  }
  const policy = raw.propagationPolicy;
  if (policy !== undefined && policy !== null) {
    if (typeof policy !== "string" || !POLICIES.includes(policy)) {
      causes.push(fieldErrors.notSupported("propagationPolicy", policy, [...POLICIES, "nil"]));
    } else {
      out.propagationPolicy = policy as PropagationPolicy;
    }
    if (out.orphanDependents !== undefined) {
      causes.push(
        fieldErrors.invalid(
          "propagationPolicy",
          policy,
          "orphanDependents and deletionPropagation cannot be both set",
        ),
      );
    }
  }
  const pre = raw.preconditions;
  if (pre !== undefined && pre !== null) {
    if (typeof pre !== "object" || Array.isArray(pre)) {
      throw errors.badRequest("json: cannot unmarshal preconditions into an object");
    }
    const p = pre as Record<string, unknown>;
    out.preconditions = {};
    if (typeof p.uid === "string" && p.uid !== "") out.preconditions.uid = p.uid;
    if (typeof p.resourceVersion === "string" && p.resourceVersion !== "") {
      out.preconditions.resourceVersion = p.resourceVersion;
    }
  }
  const dry = raw.dryRun;
  if (dry !== undefined && dry !== null) {
    const values = Array.isArray(dry) ? dry : [dry];
    const bad = values.filter((v) => v !== "All");
    if (bad.length > 0) causes.push(fieldErrors.notSupported("dryRun", bad, ["All"]));
    out.dryRun = values.length > 0 && bad.length === 0;
  }
  if (causes.length > 0) throw invalidOptions(causes);
  return out;
}

/** DeleteOptions given as an object (e.g. an Eviction's `deleteOptions`), validated as a DELETE's. */
export function deleteOptionsFrom(raw: Record<string, unknown>): DeleteOptions {
  return validate(raw);
}

/**
 * DeleteOptions of a request: the body when it has one (JSON, YAML or protobuf),
 * the query parameters otherwise, as Kubernetes reads them.
 */
export function parseDeleteOptions(body: Buffer, media: MediaType, q: Query): DeleteOptions {
  if (body.length > 0) {
    let value: unknown;
    if (isProtobufContentType(media.type)) {
      try {
        value = decodeProtobufObject(body);
      } catch (err) {
        throw errors.badRequest(`unable to decode DeleteOptions: ${(err as Error).message}`);
      }
    } else if (media.type === "application/yaml") {
      value = decodeYaml(body.toString("utf8")).value;
    } else {
      value = decodeJson(body.toString("utf8")).value;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw errors.badRequest("decoded object cannot be converted to DeleteOptions");
    }
    const kind = (value as { kind?: unknown }).kind;
    if (kind !== undefined && kind !== "" && kind !== "DeleteOptions") {
      throw errors.badRequest("decoded object cannot be converted to DeleteOptions");
    }
    return validate(value as Record<string, unknown>);
  }
  const raw: Record<string, unknown> = {};
  const grace = q.int("gracePeriodSeconds");
  if (grace !== undefined) raw.gracePeriodSeconds = grace;
  const policy = q.string("propagationPolicy");
  if (policy !== undefined && policy !== "") raw.propagationPolicy = policy;
  const orphan = q.string("orphanDependents");
  if (orphan !== undefined && orphan !== "") {
    const b = parseGoBool(orphan);
    if (b === undefined)
      throw errors.badRequest(
        `strconv.ParseBool: parsing ${JSON.stringify(orphan)}: invalid syntax`,
      );
    raw.orphanDependents = b;
  }
  const dry = q.strings("dryRun").filter((v) => v !== "");
  if (dry.length > 0) raw.dryRun = dry;
  return validate(raw);
}
