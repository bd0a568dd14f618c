/**
 * The review types (SelfSubjectReview, SelfSubjectAccessReview,
 * SelfSubjectRulesReview): create-only, answered from the caller's identity,
 * never stored, in JSON and in the protobuf kubectl sends.
 */
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTOBUF_MAGIC } from "../../src/apiserver/wire/index.ts";
import { type Harness, startHarness } from "./harness.ts";

const SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const RULES = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const PROTOBUF = { "content-type": "application/vnd.kubernetes.protobuf" };

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** A length-delimited protobuf field holding `value` (a string or an encoded message). */
function field(n: number, value: string | Uint8Array): Uint8Array {
  const w = protobuf.Writer.create().uint32((n << 3) | 2);
  return (typeof value === "string" ? w.string(value) : w.bytes(value)).finish();
}

const concat = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);

/** A Kubernetes protobuf body: magic, then runtime.Unknown{typeMeta, raw}. */
function protobufBody(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const typeMeta = concat(field(1, apiVersion), field(2, kind));
  return Buffer.concat([PROTOBUF_MAGIC, concat(field(1, typeMeta), field(2, raw))]);
}

describe("SelfSubjectAccessReview", () => {
  it("allows every request of a system:masters caller, with no RBAC reason", async () => {
    const r = await h.post(SSAR, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { verb: "delete", resource: "secrets", namespace: "x" } },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { verb: "delete", resource: "secrets", namespace: "x" } },
      status: { allowed: true },
    });
    expect(r.body.status.reason).toBeUndefined();
    expect(r.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it("decodes kubectl's protobuf body", async () => {
    // spec (2) { resourceAttributes (1) { verb (2), resource (5) } }
    const spec = field(1, concat(field(2, "create"), field(5, "configmaps")));
    const r = await h.request("POST", SSAR, {
      raw: protobufBody("authorization.k8s.io/v1", "SelfSubjectAccessReview", field(2, spec)),
      headers: PROTOBUF,
    });
    expect(r.status).toBe(201);
    expect(r.body.spec).toEqual({ resourceAttributes: { verb: "create", resource: "configmaps" } });
    expect(r.body.status.allowed).toBe(true);
  });

  it("wants exactly one of resourceAttributes and nonResourceAttributes (422)", async () => {
    const none = await h.post(SSAR, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: {},
    });
    expect(none.status).toBe(422);
    expect(none.body.details.causes).toEqual([
      expect.objectContaining({ field: "spec.resourceAttributes", reason: "FieldValueRequired" }),
    ]);
    const both = await h.post(SSAR, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      spec: { resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/healthz" } },
    });
    expect(both.status).toBe(422);
    expect(both.body.details.causes[0].field).toBe("spec.nonResourceAttributes");
  });

  it("refuses a body of another kind (400) and every verb but create (405)", async () => {
    const wrong = await h.post(SSAR, { apiVersion: "v1", kind: "ConfigMap", metadata: {} });
    expect(wrong.status).toBe(400);
    expect((await h.get(SSAR)).status).toBe(405);
    expect((await h.get(`${SSAR}/x`)).status).toBe(405);
    expect((await h.del(`${SSAR}/x`)).status).toBe(405);
  });

  it("stores nothing", async () => {
    const before = await h.store.currentRevision();
    for (const path of [SSAR, RULES, WHOAMI]) {
      const kind = path.includes("rules")
        ? "SelfSubjectRulesReview"
        : path.includes("access")
          ? "SelfSubjectAccessReview"
          : "SelfSubjectReview";
      const r = await h.post(path, {
        apiVersion: path.split("/").slice(2, 4).join("/"),
        kind,
        spec: kind === "SelfSubjectAccessReview" ? { resourceAttributes: { verb: "get" } } : {},
      });
      expect(r.status, path).toBe(201);
    }
    expect(await h.store.currentRevision()).toBe(before);
    const { items } = await h.store.list("/registry/authorization.k8s.io/");
    expect(items).toEqual([]);
  });
});

describe("SelfSubjectRulesReview", () => {
  it("lists one rule allowing everything", async () => {
    const r = await h.post(RULES, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectRulesReview",
      spec: { namespace: "default" },
    });
    expect(r.status).toBe(201);
    expect(r.body.status).toEqual({
      resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
      nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
      incomplete: false,
    });
  });
});

describe("SelfSubjectReview", () => {
  it("names the caller and its groups, protobuf body or JSON", async () => {
    const viaJson = await h.post(WHOAMI, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
    });
    const viaProtobuf = await h.request("POST", WHOAMI, {
      raw: protobufBody("authentication.k8s.io/v1", "SelfSubjectReview", new Uint8Array()),
      headers: PROTOBUF,
    });
    for (const r of [viaJson, viaProtobuf]) {
      expect(r.status).toBe(201);
      expect(r.body.status.userInfo).toEqual({
        username: "admin",
        groups: ["system:masters", "system:authenticated"],
      });
    }
  });
});
