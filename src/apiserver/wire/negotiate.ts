/**
 * Choosing the response representation from the Accept header, as Kubernetes
 * does: plain JSON or YAML of the object, or a transformation of it asked for with
 * media type parameters (`as=Table;g=meta.k8s.io;v=v1`,
 * `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`), or Kubernetes protobuf
 * (`application/vnd.kubernetes.protobuf`, objects and PartialObjectMetadata; not
 * Tables) for the kinds that have a protobuf encoding (the built-ins). A wildcard
 * (any type, or `application/*`) means JSON, as it does to kube-apiserver.
 */
import { errors, type StatusError } from "@setpoint/api";
import { type MediaType, parseAccept } from "./media-type.ts";

export type OutputKind = "object" | "table" | "partial";

/** The media types of a response. */
export type ResponseMediaType =
  | "application/json"
  | "application/yaml"
  | "application/vnd.kubernetes.protobuf";

const PROTOBUF = "application/vnd.kubernetes.protobuf";

export interface Output {
  mediaType: ResponseMediaType;
  kind: OutputKind;
  /** For Table and PartialObjectMetadata: the meta.k8s.io version ("v1" or "v1beta1"). */
  metaVersion?: string;
  /** The Content-Type to answer with. */
  contentType: string;
}

/** Media types the server can answer in (protobuf for the kinds that have an encoding). */
export const RESPONSE_MEDIA_TYPES = ["application/json", "application/yaml", PROTOBUF];

function notAcceptable(protobuf: boolean): StatusError {
  const types = protobuf ? RESPONSE_MEDIA_TYPES : RESPONSE_MEDIA_TYPES.slice(0, 2);
  return errors.notAcceptable(`only the following media types are accepted: ${types.join(", ")}`);
}

function quality(m: MediaType): number {
  const q = m.params.q;
  if (q === undefined) return 1;
  const n = Number(q);
  return Number.isFinite(n) ? n : 0;
}

function baseType(type: string, protobuf: boolean): ResponseMediaType | null {
  if (type === "application/json" || type === "application/*" || type === "*/*") {
    return "application/json";
  }
  if (type === "application/yaml") return "application/yaml";
  if (protobuf && type === PROTOBUF) return PROTOBUF;
  return null;
}

/**
 * The representation for a response. `list` says whether the response is a
 * collection (then PartialObjectMetadataList, not PartialObjectMetadata, is asked for).
 * An absent or empty Accept means JSON. `protobuf`: whether the kind has a protobuf
 * encoding.
 */
export function negotiateOutput(
  accept: string | undefined,
  list: boolean,
  protobuf = false,
): Output {
  // Clients send the same few Accept headers again and again.
  const key = `${list ? "l" : "o"}${protobuf ? "p" : ""}:${accept ?? ""}`;
  const hit = negotiated.get(key);
  if (hit !== undefined) return hit;
  const out = negotiate(accept, list, protobuf);
  if (negotiated.size >= NEGOTIATED_OUTPUTS) negotiated.clear();
  negotiated.set(key, out);
  return out;
}

/** Accept headers whose negotiation is remembered, at most (then forgotten all at once). */
export const NEGOTIATED_OUTPUTS = 256;

/** Outputs by list-or-object and Accept header (shared: never modified). */
const negotiated = new Map<string, Output>();

function negotiate(accept: string | undefined, list: boolean, protobuf: boolean): Output {
  const ranges = parseAccept(accept)
    .map((m, i) => ({ m, i, q: quality(m) }))
    .filter((r) => r.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map((r) => r.m);
  if (ranges.length === 0) {
    return { mediaType: "application/json", kind: "object", contentType: "application/json" };
  }
  for (const m of ranges) {
    const base = baseType(m.type, protobuf);
    if (!base) continue;
    const as = m.params.as;
    if (as === undefined) {
      return { mediaType: base, kind: "object", contentType: base };
    }
    const g = m.params.g;
    const v = m.params.v;
    if (g !== "meta.k8s.io" || (v !== "v1" && v !== "v1beta1")) continue;
    const contentType = `${base};as=${as};g=${g};v=${v}`;
    if (as === "Table") {
      // Tables are JSON or YAML only.
      if (base === PROTOBUF) continue;
      return { mediaType: base, kind: "table", metaVersion: v, contentType };
    }
    if (as === (list ? "PartialObjectMetadataList" : "PartialObjectMetadata")) {
      if (base === PROTOBUF && v !== "v1") continue;
      return { mediaType: base, kind: "partial", metaVersion: v, contentType };
    }
  }
  throw notAcceptable(protobuf);
}

/** The Content-Type of a protobuf watch stream. */
const PROTOBUF_WATCH = `${PROTOBUF};stream=watch`;

/** For watch streams: JSON (YAML has no stream framing), or length-prefixed protobuf. */
export function negotiateWatchOutput(accept: string | undefined, protobuf = false): Output {
  const out = negotiateOutput(accept, false, protobuf);
  if (out.mediaType === PROTOBUF) return { ...out, contentType: PROTOBUF_WATCH };
  if (out.mediaType !== "application/json") {
    // A YAML watch is served as JSON frames, like Kubernetes' JSON fallback.
    return { ...out, mediaType: "application/json", contentType: "application/json" };
  }
  return { ...out, contentType: "application/json" };
}
