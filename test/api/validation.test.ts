import {
  CauseType,
  dns1123LabelErrors,
  dns1123SubdomainErrors,
  errors,
  generateName,
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidLabelValue,
  type ObjectMeta,
  qualifiedNameErrors,
  TOTAL_ANNOTATION_SIZE_LIMIT,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validateObjectName,
} from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

describe("format checks", () => {
  it("DNS-1123 labels", () => {
    expect(isDNS1123Label("my-name")).toBe(true);
    expect(isDNS1123Label("a".repeat(63))).toBe(true);
    expect(isDNS1123Label("a".repeat(64))).toBe(false);
    for (const bad of ["", "-a", "a-", "A", "a.b", "a_b"]) expect(isDNS1123Label(bad)).toBe(false);
    expect(dns1123LabelErrors("a.b")).toEqual(["must not contain dots"]);
    expect(dns1123LabelErrors("a".repeat(64))).toEqual(["must be no more than 63 characters"]);
  });

  it("DNS-1123 subdomains", () => {
    expect(isDNS1123Subdomain("example.com")).toBe(true);
    expect(isDNS1123Subdomain(`${"a".repeat(63)}.${"b".repeat(63)}`)).toBe(true);
    expect(isDNS1123Subdomain(`${"a.".repeat(126)}a`)).toBe(true); // 253
    expect(isDNS1123Subdomain(`${"a.".repeat(126)}ab`)).toBe(false); // 254
    for (const bad of ["", ".a", "a..b", "Foo", "a_b"]) expect(isDNS1123Subdomain(bad)).toBe(false);
    expect(dns1123SubdomainErrors("Foo")).toEqual([SUBDOMAIN_MSG]);
  });

  it("qualified names and label values", () => {
    for (const ok of ["a", "MyName", "my.name", "123-abc", "example.com/MyName", "a_b"]) {
      expect(isQualifiedName(ok)).toBe(true);
    }
    for (const bad of ["", "-a", "a/b/c", "/a", "Example.com/a", `x/${"a".repeat(64)}`]) {
      expect(isQualifiedName(bad)).toBe(false);
    }
    expect(qualifiedNameErrors("/a")).toEqual(["prefix part must be non-empty"]);
    expect(qualifiedNameErrors("a/")).toEqual([
      "name part must be non-empty",
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]);
    expect(qualifiedNameErrors("a/b/c")[0]).toMatch(/^a qualified name must consist of/);
    expect(isValidLabelValue("")).toBe(true);
    expect(isValidLabelValue("v1.2_b-c")).toBe(true);
    expect(isValidLabelValue("-a")).toBe(false);
    expect(isValidLabelValue("a".repeat(64))).toBe(false);
  });

  it("boolean checks agree with the message lists", () => {
    const chars = fc.constantFrom("a", "z", "0", "-", ".", "A", "_", "/");
    fc.assert(
      fc.property(fc.string({ unit: chars, maxLength: 70 }), (s) => {
        expect(isDNS1123Label(s)).toBe(dns1123LabelErrors(s).length === 0);
        expect(isDNS1123Subdomain(s)).toBe(dns1123SubdomainErrors(s).length === 0);
        // Every label is a subdomain.
        if (isDNS1123Label(s)) expect(isDNS1123Subdomain(s)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("validateObjectMeta", () => {
  const ns = { namespaced: true };

  it("accepts good metadata", () => {
    expect(
      validateObjectMeta(
        {
          name: "web-1",
          namespace: "default",
          labels: { app: "web", "app.kubernetes.io/part-of": "shop", empty: "" },
          annotations: { "Example.com/Note": "anything at all" },
          finalizers: ["example.com/cleanup", "kubernetes"],
          ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u1" }],
        },
        ns,
      ),
    ).toEqual([]);
  });

  it("words a bad name exactly as Kubernetes does", () => {
    const causes = validateObjectMeta({ name: "Foo", namespace: "default" }, ns);
    expect(causes).toEqual([
      {
        reason: CauseType.Invalid,
        field: "metadata.name",
        message: `Invalid value: "Foo": ${SUBDOMAIN_MSG}`,
      },
    ]);
    expect(errors.invalid("ConfigMap", "Foo", causes).message).toBe(
      `ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": ${SUBDOMAIN_MSG}`,
    );
  });

  it("requires a name unless generateName is set, and checks generateName", () => {
    expect(validateObjectMeta({ namespace: "default" }, ns)).toEqual([
      {
        reason: CauseType.Required,
        field: "metadata.name",
        message: "Required value: name or generateName is required",
      },
    ]);
    expect(validateObjectMeta({ generateName: "web-", namespace: "default" }, ns)).toEqual([]);
    const bad = validateObjectMeta({ generateName: "Web-", namespace: "default" }, ns);
    expect(bad.map((c) => c.field)).toEqual(["metadata.generateName"]);
    expect(bad[0].message).toMatch(/^Invalid value: "Web-": a lowercase RFC 1123 subdomain/);
  });

  it("requires a namespace iff namespaced", () => {
    expect(validateObjectMeta({ name: "a" }, ns)).toEqual([
      { reason: CauseType.Required, field: "metadata.namespace", message: "Required value" },
    ]);
    expect(validateObjectMeta({ name: "a", namespace: "x" }, { namespaced: false })).toEqual([
      {
        reason: CauseType.Forbidden,
        field: "metadata.namespace",
        message: "Forbidden: not allowed on this type",
      },
    ]);
    expect(validateObjectMeta({ name: "a", namespace: "a.b" }, ns)).toEqual([
      {
        reason: CauseType.Invalid,
        field: "metadata.namespace",
        message: 'Invalid value: "a.b": must not contain dots',
      },
    ]);
  });

  it("applies the name rule", () => {
    expect(validateObjectMeta({ name: "a.b" }, { namespaced: false, nameRule: "label" })).toEqual([
      {
        reason: CauseType.Invalid,
        field: "metadata.name",
        message: 'Invalid value: "a.b": must not contain dots',
      },
    ]);
    const seg = { namespaced: false, nameRule: "path-segment" as const };
    expect(validateObjectMeta({ name: "system:Admin" }, seg)).toEqual([]);
    expect(validateObjectMeta({ name: ".." }, seg)[0].message).toBe(
      `Invalid value: "..": may not be '..'`,
    );
    expect(validateObjectMeta({ name: "a/b%c" }, seg).map((c) => c.message)).toEqual([
      `Invalid value: "a/b%c": may not contain '/'`,
      `Invalid value: "a/b%c": may not contain '%'`,
    ]);
    expect(validateObjectName("ok-name")).toEqual([]);
    expect(validateObjectName("")[0].reason).toBe(CauseType.Required);
  });

  it("reports labels at metadata.labels", () => {
    const causes = validateObjectMeta(
      { name: "a", namespace: "d", labels: { "bad key": "v", good: "-bad", long: "x".repeat(64) } },
      ns,
    );
    expect(causes.map((c) => c.field)).toEqual([
      "metadata.labels",
      "metadata.labels",
      "metadata.labels",
    ]);
    expect(causes[0].message).toMatch(/^Invalid value: "bad key": name part must consist of/);
    expect(causes[1].message).toMatch(
      /^Invalid value: "-bad": a valid label must be an empty string/,
    );
    expect(causes[2].message).toBe(
      `Invalid value: "${"x".repeat(64)}": must be no more than 63 characters`,
    );
  });

  it("limits the total size of annotations", () => {
    const ok = { a: "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1) };
    expect(validateObjectMeta({ name: "a", namespace: "d", annotations: ok }, ns)).toEqual([]);
    const big = { ab: "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1) };
    expect(validateObjectMeta({ name: "a", namespace: "d", annotations: big }, ns)).toEqual([
      {
        reason: CauseType.TooLong,
        field: "metadata.annotations",
        message: "Too long: may not be more than 262144 bytes",
      },
    ]);
    expect(
      validateObjectMeta({ name: "a", namespace: "d", annotations: { "a b": "" } }, ns)[0].field,
    ).toBe("metadata.annotations");
  });

  it("checks finalizers", () => {
    const causes = validateObjectMeta(
      { name: "a", namespace: "d", finalizers: ["bad finalizer", "orphan", "foregroundDeletion"] },
      ns,
    );
    expect(causes.map((c) => c.field)).toEqual(["metadata.finalizers", "metadata.finalizers"]);
    expect(causes[0].message).toMatch(/^Invalid value: "bad finalizer": name part must consist/);
    expect(causes[1].message).toBe(
      'Invalid value: ["bad finalizer","orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set',
    );
  });

  it("checks owner references", () => {
    const causes = validateObjectMeta(
      {
        name: "a",
        namespace: "d",
        ownerReferences: [
          { apiVersion: "", kind: "", name: "", uid: "" },
          { apiVersion: "v1", kind: "A", name: "x", uid: "1", controller: true },
          { apiVersion: "v1", kind: "B", name: "y", uid: "2", controller: true },
        ],
      },
      ns,
    );
    expect(causes.map((c) => [c.field, c.message])).toEqual([
      ["metadata.ownerReferences.apiVersion", 'Invalid value: "": version must not be empty'],
      ["metadata.ownerReferences.kind", 'Invalid value: "": kind must not be empty'],
      ["metadata.ownerReferences.name", 'Invalid value: "": name must not be empty'],
      ["metadata.ownerReferences.uid", 'Invalid value: "": uid must not be empty'],
      [
        "metadata.ownerReferences",
        expect.stringContaining(
          'Only one reference can have Controller set to true. Found "true" in references for A/x and B/y',
        ),
      ],
    ]);
  });

  it("refuses negative generations and wrongly typed maps", () => {
    const causes = validateObjectMeta(
      { name: "a", namespace: "d", generation: -1, labels: { a: 1 as unknown as string } },
      ns,
    );
    expect(causes.map((c) => c.field)).toEqual(["metadata.generation", "metadata.labels.a"]);
  });
});

describe("validateObjectMetaUpdate", () => {
  const old: ObjectMeta = {
    name: "a",
    namespace: "d",
    uid: "u1",
    creationTimestamp: "2024-01-01T00:00:00Z",
    resourceVersion: "5",
    finalizers: ["example.com/a"],
  };

  it("allows ordinary changes and leaves out system fields as unchanged", () => {
    expect(validateObjectMetaUpdate({ ...old, labels: { x: "y" } }, old)).toEqual([]);
    expect(validateObjectMetaUpdate({ name: "a", namespace: "d" }, old)).toEqual([]);
  });

  it("keeps identity fields immutable", () => {
    const causes = validateObjectMetaUpdate(
      { ...old, name: "b", namespace: "e", uid: "u2", creationTimestamp: "2025-01-01T00:00:00Z" },
      old,
    );
    expect(causes).toEqual([
      {
        reason: CauseType.Invalid,
        field: "metadata.name",
        message: 'Invalid value: "b": field is immutable',
      },
      {
        reason: CauseType.Invalid,
        field: "metadata.namespace",
        message: 'Invalid value: "e": field is immutable',
      },
      {
        reason: CauseType.Invalid,
        field: "metadata.uid",
        message: 'Invalid value: "u2": field is immutable',
      },
      {
        reason: CauseType.Invalid,
        field: "metadata.creationTimestamp",
        message: 'Invalid value: "2025-01-01T00:00:00Z": field is immutable',
      },
    ]);
  });

  it("refuses new finalizers once deleting, as Kubernetes words it", () => {
    const deleting = { ...old, deletionTimestamp: "2024-02-01T00:00:00Z" };
    expect(
      validateObjectMetaUpdate(
        { ...deleting, finalizers: ["example.com/a", "z/b", "c"] },
        deleting,
      ),
    ).toEqual([
      {
        reason: CauseType.Forbidden,
        field: "metadata.finalizers",
        message:
          'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"c", "z/b"}',
      },
    ]);
    expect(validateObjectMetaUpdate({ ...deleting, finalizers: [] }, deleting)).toEqual([]);
    // Before deletion, adding is fine.
    expect(validateObjectMetaUpdate({ ...old, finalizers: ["example.com/a", "c"] }, old)).toEqual(
      [],
    );
  });

  it("validates the new labels, annotations and finalizers", () => {
    const causes = validateObjectMetaUpdate(
      { ...old, labels: { "-x": "" }, finalizers: ["bad one"] },
      old,
    );
    expect(causes.map((c) => c.field)).toEqual(["metadata.labels", "metadata.finalizers"]);
  });
});

describe("generateName", () => {
  it("appends five characters from Kubernetes' alphabet", () => {
    for (let i = 0; i < 200; i++) {
      const n = generateName("web-");
      expect(n).toMatch(/^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    }
    expect(generateName("web-")).not.toBe(generateName("web-"));
  });

  it("cuts long prefixes so the name fits a DNS label", () => {
    const n = generateName("p".repeat(100));
    expect(n).toHaveLength(63);
    expect(n.startsWith("p".repeat(58))).toBe(true);
  });

  it("uses every character of the alphabet", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) for (const c of generateName("").split("")) seen.add(c);
    expect(seen.size).toBe(27);
  });
});
