/**
 * Every built-in kind in protobuf and back: a sample object with every field of
 * its schema set (made from the schema, not from the messages) encodes to
 * protobuf and decodes to the same JSON; lists, Status and watch frames are laid
 * out as kube-apiserver writes them; and the bytes of a small object are those
 * Kubernetes' generated marshallers write (non-pointer fields written even when
 * zero, fields in number order).
 */
import type { KubeObject, Schema } from "@setpoint/api";
import { apiVersionOf } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import {
  decodeProtobufObject,
  encodeProtobufObject,
  encodeProtobufWatchEvent,
  hasProtobufEncoding,
  PROTOBUF_MAGIC,
} from "../../src/apiserver/wire/index.ts";
import { protobufRoot } from "../../src/apiserver/wire/protobuf/messages.ts";
import { builtinDefinitions } from "../../src/registry/builtin/index.ts";
import { schemaDefinition } from "../../src/registry/definitions.ts";

const META = "io.k8s.apimachinery.pkg.apis.meta.v1";

/** A value for every field of `schema`: nothing zero, so nothing Go would leave out. */
function sample(schema: Schema, depth: number, seen: Set<string>): unknown {
  const name = schemaDefinition(schema)?.name;
  if (name === `${META}.Time`) return "2024-01-02T03:04:05Z";
  if (name === `${META}.MicroTime`) return "2024-01-02T03:04:05.123456Z";
  if (name === `${META}.FieldsV1`) return { "f:data": { "f:a": {} } };
  if (name?.endsWith(".Quantity")) return "1500m";
  if (schema["x-kubernetes-int-or-string"]) return depth % 2 ? 8080 : "http";
  if (name?.endsWith(".RawExtension")) return { apiVersion: "v1", kind: "ConfigMap" };
  if (schema.enum?.length) return schema.enum[0];
  if (name) {
    // A struct that contains itself (JSONSchemaProps) is written once per path.
    if (seen.has(name)) return undefined;
    seen = new Set(seen).add(name);
  }
  switch (schema.type) {
    case "object": {
      if (schema.properties) {
        const out: Record<string, unknown> = {};
        // An embedded kind (a StatefulSet's volumeClaimTemplates): its message
        // carries no TypeMeta, in Go's protobuf as here.
        const embeddedKind = depth > 0 && "metadata" in schema.properties;
        for (const [k, p] of Object.entries(schema.properties)) {
          if (embeddedKind && (k === "apiVersion" || k === "kind")) continue;
          const v = sample(p as Schema, depth + 1, seen);
          if (v !== undefined) out[k] = v;
        }
        return out;
      }
      if (typeof schema.additionalProperties === "object") {
        const v = sample(schema.additionalProperties as Schema, depth + 1, seen);
        return v === undefined ? undefined : { "key-a": v };
      }
      // An object of no declared fields (meta/v1 DeleteOptions inside an Eviction).
      return {};
    }
    case "array": {
      const v = sample(schema.items as Schema, depth + 1, seen);
      return v === undefined ? undefined : [v];
    }
    case "string":
      return schema.format === "byte" ? "YWJj" : `s${depth}`;
    case "integer":
      return 7;
    case "number":
      return 1.5;
    case "boolean":
      return true;
    default:
      return undefined;
  }
}

/** Each built-in kind (and the kinds its create subresources take) in each served version. */
const kinds = builtinDefinitions().flatMap((def) =>
  [def, ...(def.createSubresources ?? []).map((s) => s.kind)].flatMap((d) =>
    d.versions.map((v) => ({ def: d, version: v })),
  ),
);

describe("every built-in kind in protobuf and back", () => {
  it.each(
    kinds.map((k) => [`${apiVersionOf(k.def.group, k.version.name)} ${k.def.names.kind}`, k]),
  )("%s: every field survives", (_name, { def, version }) => {
    const obj = sample(version.schema, 0, new Set()) as KubeObject;
    obj.apiVersion = apiVersionOf(def.group, version.name);
    obj.kind = def.names.kind;
    // An Eviction's deleteOptions is an opaque object in its schema, a message in protobuf.
    if (def.names.kind === "Eviction") {
      (obj as { deleteOptions?: unknown }).deleteOptions = {
        gracePeriodSeconds: 7,
        dryRun: ["All"],
      };
    }
    const bytes = encodeProtobufObject(obj);
    expect(bytes).toBeDefined();
    expect(bytes!.subarray(0, 4)).toEqual(PROTOBUF_MAGIC);
    expect(decodeProtobufObject(bytes!)).toEqual(obj);
  });

  it("knows no encoding for custom resources or Tables (answered in JSON)", () => {
    expect(hasProtobufEncoding("example.com/v1", "Widget")).toBe(false);
    expect(hasProtobufEncoding("meta.k8s.io/v1", "Table")).toBe(false);
    expect(encodeProtobufObject({ apiVersion: "example.com/v1", kind: "Widget" })).toBeUndefined();
    expect(hasProtobufEncoding("apps/v1", "DeploymentList")).toBe(true);
    expect(hasProtobufEncoding("v1", "Status")).toBe(true);
  });
});

const root = protobufRoot();
const unknownType = root.lookupType("k8s.io.apimachinery.pkg.runtime.Unknown");

function envelopeOf(bytes: Buffer) {
  return unknownType.toObject(unknownType.decode(bytes.subarray(4)), { defaults: true }) as {
    typeMeta: { apiVersion: string; kind: string };
    raw: Uint8Array;
    contentEncoding: string;
    contentType: string;
  };
}

describe("as kube-apiserver lays them out", () => {
  it("writes a ControllerRevision as Go does: absent non-pointer fields as zero, in number order", () => {
    const bytes = encodeProtobufObject({
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: { name: "r" },
      revision: 2,
    })!;
    const env = envelopeOf(bytes);
    expect(env.typeMeta).toEqual({ apiVersion: "apps/v1", kind: "ControllerRevision" });
    expect(env.contentEncoding).toBe("");
    expect(env.contentType).toBe("");
    // metadata {name: "r"}, data (RawExtension, not a pointer) empty, revision 2.
    expect(Buffer.from(env.raw).toString("hex")).toBe("0a030a0172" + "1200" + "1802");
    // The envelope: typeMeta 1, raw 2, then contentEncoding 3 and contentType 4, both empty.
    expect(bytes.subarray(4).subarray(-4).toString("hex")).toBe("1a002200");
  });

  it("writes int-or-strings with their type, and quantities as strings", () => {
    const svc = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "s" },
      spec: { ports: [{ port: 80, targetPort: "http" }] },
    };
    const obj = decodeProtobufObject(encodeProtobufObject(svc)!);
    expect(obj.spec).toEqual({ ports: [{ port: 80, targetPort: "http" }] });
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: {
        containers: [
          { name: "c", image: "i", resources: { limits: { cpu: "250m", memory: "1Gi" } } },
        ],
      },
    };
    expect(decodeProtobufObject(encodeProtobufObject(pod)!).spec).toEqual(pod.spec);
  });

  it("writes lists as <Kind>List with ListMeta and items without apiVersion and kind", () => {
    const list = {
      apiVersion: "apps/v1",
      kind: "DeploymentList",
      metadata: { resourceVersion: "42", continue: "c" },
      items: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "a" },
          spec: { replicas: 2 },
        },
        { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "b" } },
      ],
    };
    const env = envelopeOf(encodeProtobufObject(list)!);
    expect(env.typeMeta).toEqual({ apiVersion: "apps/v1", kind: "DeploymentList" });
    const type = root.lookupType("k8s.io.api.apps.v1.DeploymentList");
    const decoded = type.toObject(type.decode(env.raw)) as {
      metadata: Record<string, unknown>;
      items: { metadata: { name: string }; spec?: { replicas?: number } }[];
    };
    expect(decoded.metadata).toEqual({ resourceVersion: "42", continue: "c" });
    expect(decoded.items.map((i) => i.metadata.name)).toEqual(["a", "b"]);
    expect(decoded.items[0].spec?.replicas).toBe(2);
  });

  it("writes a Status with its code, reason and causes", () => {
    const status = {
      apiVersion: "v1",
      kind: "Status",
      metadata: {},
      status: "Failure",
      message: 'deployments.apps "x" not found',
      reason: "NotFound",
      details: { name: "x", group: "apps", kind: "deployments", causes: [{ field: "f" }] },
      code: 404,
    };
    const env = envelopeOf(encodeProtobufObject(status)!);
    expect(env.typeMeta).toEqual({ apiVersion: "v1", kind: "Status" });
    const type = root.lookupType("k8s.io.apimachinery.pkg.apis.meta.v1.Status");
    expect(type.toObject(type.decode(env.raw))).toEqual({
      metadata: {},
      status: "Failure",
      message: 'deployments.apps "x" not found',
      reason: "NotFound",
      details: { name: "x", group: "apps", kind: "deployments", causes: [{ field: "f" }] },
      code: 404,
    });
  });

  it("frames watch events: a 4-byte length, then a WatchEvent holding the object's envelope", () => {
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "b" } };
    const frame = encodeProtobufWatchEvent("MODIFIED", cm)!;
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    const type = root.lookupType("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent");
    const event = type.decode(frame.subarray(4)) as unknown as {
      type: string;
      object: { raw: Uint8Array };
    };
    expect(event.type).toBe("MODIFIED");
    expect(decodeProtobufObject(Buffer.from(event.object.raw))).toEqual(cm);
  });
});
