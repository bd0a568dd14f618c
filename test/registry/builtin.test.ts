import { childSchema, type KubeObject, type Schema } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import {
  configMapDefinition,
  coreEventDefinition,
  eventsV1EventDefinition,
  leaseDefinition,
  namespaceDefinition,
  secretDefinition,
  serviceAccountDefinition,
} from "../../src/registry/builtin/index.ts";
import type { ResourceDefinition } from "../../src/registry/index.ts";

function schemaAt(def: ResourceDefinition, path: string): Schema | undefined {
  let s: Schema | undefined = def.versions[0].schema;
  for (const p of path.split(".")) s = childSchema(s, p === "[]" ? 0 : p);
  return s;
}

function obj(
  kind: string,
  fields: Record<string, unknown>,
  meta: KubeObject["metadata"] = {},
): KubeObject {
  return {
    apiVersion: "v1",
    kind,
    metadata: { name: "x", namespace: "default", ...meta },
    ...fields,
  };
}

function validate(def: ResourceDefinition, o: KubeObject, old?: KubeObject) {
  return def.strategy.validate?.(o, old) ?? [];
}

describe("schema markers", () => {
  it("ObjectMeta carries Kubernetes' list and patch markers", () => {
    const owners = schemaAt(configMapDefinition, "metadata.ownerReferences");
    expect(owners?.["x-kubernetes-list-type"]).toBe("map");
    expect(owners?.["x-kubernetes-list-map-keys"]).toEqual(["uid"]);
    expect(owners?.["x-kubernetes-patch-merge-key"]).toBe("uid");
    expect(owners?.["x-kubernetes-patch-strategy"]).toBe("merge");
    expect(owners?.items?.required).toEqual(["apiVersion", "kind", "name", "uid"]);
    expect(owners?.items?.["x-kubernetes-map-type"]).toBe("atomic");
    const finalizers = schemaAt(configMapDefinition, "metadata.finalizers");
    expect(finalizers?.["x-kubernetes-list-type"]).toBe("set");
    expect(finalizers?.["x-kubernetes-patch-strategy"]).toBe("merge");
    expect(
      schemaAt(configMapDefinition, "metadata.managedFields")?.["x-kubernetes-list-type"],
    ).toBe("atomic");
    expect(
      schemaAt(configMapDefinition, "metadata.managedFields.[].fieldsV1")?.[
        "x-kubernetes-preserve-unknown-fields"
      ],
    ).toBe(true);
    expect(schemaAt(configMapDefinition, "metadata.creationTimestamp")?.format).toBe("date-time");
  });

  it("type-specific lists carry their markers", () => {
    const conds = schemaAt(namespaceDefinition, "status.conditions");
    expect(conds?.["x-kubernetes-list-map-keys"]).toEqual(["type"]);
    expect(conds?.["x-kubernetes-patch-merge-key"]).toBe("type");
    expect(schemaAt(namespaceDefinition, "spec.finalizers")?.["x-kubernetes-list-type"]).toBe(
      "atomic",
    );
    const secrets = schemaAt(serviceAccountDefinition, "secrets");
    expect(secrets?.["x-kubernetes-patch-merge-key"]).toBe("name");
    expect(secrets?.["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    expect(schemaAt(serviceAccountDefinition, "imagePullSecrets")?.["x-kubernetes-list-type"]).toBe(
      "atomic",
    );
    expect(schemaAt(coreEventDefinition, "involvedObject")?.["x-kubernetes-map-type"]).toBe(
      "atomic",
    );
    expect(schemaAt(secretDefinition, "data.key")?.format).toBe("byte");
    expect(schemaAt(leaseDefinition, "spec.renewTime")?.format).toBe("date-time");
    expect(eventsV1EventDefinition.versions[0].schema.required).toEqual(["eventTime"]);
  });

  it("every property has a description, every kind has apiVersion, kind and metadata", () => {
    for (const def of [
      configMapDefinition,
      coreEventDefinition,
      eventsV1EventDefinition,
      leaseDefinition,
      namespaceDefinition,
      secretDefinition,
      serviceAccountDefinition,
    ]) {
      const root = def.versions[0].schema;
      expect(Object.keys(root.properties ?? {})).toEqual(
        expect.arrayContaining(["apiVersion", "kind", "metadata"]),
      );
      const missing: string[] = [];
      const walk = (s: Schema, path: string) => {
        for (const [k, p] of Object.entries(s.properties ?? {})) {
          if (!p.description) missing.push(`${path}.${k}`);
          walk(p, `${path}.${k}`);
          if (p.items) walk(p.items, `${path}.${k}[]`);
        }
      };
      walk(root, def.names.kind);
      expect(missing).toEqual([]);
    }
  });
});

describe("Namespace", () => {
  it("defaults phase Active and the name label; create adds the kubernetes finalizer", () => {
    const ns = obj("Namespace", {}, { name: "team-a", namespace: undefined });
    namespaceDefinition.strategy.prepareForCreate?.(ns);
    namespaceDefinition.strategy.default?.(ns);
    expect(ns.status).toEqual({ phase: "Active" });
    expect(ns.spec).toEqual({ finalizers: ["kubernetes"] });
    expect(ns.metadata.labels).toEqual({ "kubernetes.io/metadata.name": "team-a" });
    const again = obj("Namespace", {
      spec: { finalizers: ["kubernetes", "example.com/x"] },
      status: { phase: "Terminating" },
    });
    namespaceDefinition.strategy.prepareForCreate?.(again);
    expect(again.spec).toEqual({ finalizers: ["kubernetes", "example.com/x"] });
    expect(again.status).toEqual({ phase: "Active" });
  });

  it("main-resource updates keep finalizers and status; /finalize changes finalizers", () => {
    const old = obj("Namespace", {
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
    const upd = obj("Namespace", { spec: { finalizers: [] }, status: { phase: "Terminating" } });
    namespaceDefinition.strategy.prepareForUpdate?.(upd, old);
    expect(upd.spec).toEqual({ finalizers: ["kubernetes"] });
    expect(upd.status).toEqual({ phase: "Active" });
    const finalize = namespaceDefinition.subresources?.find((s) => s.name === "finalize");
    expect(finalize?.verbs).toEqual(["update"]);
    const next = finalize?.update(
      obj("Namespace", { spec: { finalizers: [] }, status: { phase: "X" } }),
      old,
    );
    expect(next?.spec).toEqual({ finalizers: [] });
    expect(next?.status).toEqual({ phase: "Active" });
    expect(namespaceDefinition.verbs).not.toContain("deletecollection");
  });

  it("validates finalizer names and phase transitions", () => {
    const bad = obj("Namespace", {
      spec: { finalizers: ["kubernetes", "bogus", "example.com/ok"] },
    });
    const causes = validate(namespaceDefinition, bad);
    expect(causes).toHaveLength(1);
    expect(causes[0].field).toBe("spec.finalizers[1]");
    expect(causes[0].message).toContain(
      "neither a standard finalizer name nor is it fully qualified",
    );
    const old = obj("Namespace", { status: { phase: "Active" } });
    const terminating = obj("Namespace", { status: { phase: "Terminating" } });
    expect(validate(namespaceDefinition, terminating, old)[0]?.field).toBe("status.phase");
    const deleting = obj(
      "Namespace",
      { status: { phase: "Terminating" } },
      { deletionTimestamp: "2024-01-01T00:00:00Z" },
    );
    expect(validate(namespaceDefinition, deleting, old)).toEqual([]);
    expect(namespaceDefinition.strategy.selectableFields?.["status.phase"]?.(terminating)).toBe(
      "Terminating",
    );
  });
});

describe("ConfigMap", () => {
  it("accepts valid keys and refuses bad, clashing and oversized ones", () => {
    expect(
      validate(
        configMapDefinition,
        obj("ConfigMap", { data: { "a.b_c-D": "1" }, binaryData: { bin: "AAE=" } }),
      ),
    ).toEqual([]);
    const causes = validate(
      configMapDefinition,
      obj("ConfigMap", {
        data: { "bad key": "x", "..x": "y", dup: "z" },
        binaryData: { dup: "AA==", ".": "AA==" },
      }),
    );
    const fields = causes.map((c) => c.field).sort();
    expect(fields).toEqual(["binaryData[.]", "data[..x]", "data[bad key]", "data[dup]"]);
    expect(causes.find((c) => c.field === "data[bad key]")?.message).toMatch(
      /^Invalid value: "bad key": a valid config key must consist of alphanumeric characters/,
    );
    expect(
      validate(configMapDefinition, obj("ConfigMap", { data: { k: "x".repeat(254) } })),
    ).toEqual([]);
    expect(
      validate(configMapDefinition, obj("ConfigMap", { binaryData: { b: "!!" } })).map(
        (c) => c.field,
      ),
    ).toEqual(["binaryData[b]"]);
    expect(
      validate(configMapDefinition, obj("ConfigMap", { data: { ["k".repeat(254)]: "x" } }))[0]
        ?.message,
    ).toContain("253");
    const big = validate(
      configMapDefinition,
      obj("ConfigMap", { data: { a: "x".repeat(600_000), b: "y".repeat(500_000) } }),
    );
    expect(big.map((c) => c.reason)).toEqual(["FieldValueTooLong"]);
  });

  it("refuses data changes once immutable", () => {
    const old = obj("ConfigMap", { data: { a: "1" }, immutable: true });
    expect(
      validate(configMapDefinition, obj("ConfigMap", { data: { a: "1" }, immutable: true }), old),
    ).toEqual([]);
    const causes = validate(configMapDefinition, obj("ConfigMap", { data: { a: "2" } }), old);
    expect(causes.map((c) => c.field).sort()).toEqual(["data", "immutable"]);
    expect(causes[0].message).toBe("Forbidden: field is immutable when `immutable` is set");
  });
});

describe("Secret", () => {
  it("merges stringData into base64 data, drops it and defaults the type", () => {
    const s = obj("Secret", {
      data: { a: Buffer.from("old").toString("base64"), b: "YmI=" },
      stringData: { a: "new", c: "ü" },
    });
    secretDefinition.strategy.default?.(s);
    expect(s.stringData).toBeUndefined();
    expect(s.type).toBe("Opaque");
    const data = s.data as Record<string, string>;
    expect(Buffer.from(data.a, "base64").toString()).toBe("new");
    expect(data.b).toBe("YmI=");
    expect(Buffer.from(data.c, "base64").toString()).toBe("ü");
    expect(validate(secretDefinition, s)).toEqual([]);
  });

  it("requires valid base64 values and type-specific keys; type is immutable", () => {
    const bad = obj("Secret", { type: "Opaque", data: { a: "not base64!", "b/c": "AA==" } });
    expect(
      validate(secretDefinition, bad)
        .map((c) => c.field)
        .sort(),
    ).toEqual(["data[a]", "data[b/c]"]);
    const tls = obj("Secret", { type: "kubernetes.io/tls", data: { "tls.crt": "AA==" } });
    expect(validate(secretDefinition, tls).map((c) => c.field)).toEqual(["data[tls.key]"]);
    const old = obj("Secret", { type: "Opaque", data: {} });
    const changed = obj("Secret", { type: "example.com/other", data: {} });
    expect(validate(secretDefinition, changed, old).map((c) => c.message)).toEqual([
      'Invalid value: "example.com/other": field is immutable',
    ]);
    expect(secretDefinition.strategy.selectableFields?.type?.(changed)).toBe("example.com/other");
  });
});

describe("Lease", () => {
  it("validates durations, transitions and strategy", () => {
    expect(
      validate(
        leaseDefinition,
        obj("Lease", { spec: { holderIdentity: "a", leaseDurationSeconds: 15 } }),
      ),
    ).toEqual([]);
    const causes = validate(
      leaseDefinition,
      obj("Lease", {
        spec: {
          leaseDurationSeconds: 0,
          leaseTransitions: -1,
          strategy: "Bogus",
          preferredHolder: "b",
        },
      }),
    );
    expect(causes.map((c) => c.field)).toEqual([
      "spec.leaseDurationSeconds",
      "spec.leaseTransitions",
      "spec.strategy",
    ]);
    expect(
      validate(leaseDefinition, obj("Lease", { spec: { preferredHolder: "b" } })).map(
        (c) => c.reason,
      ),
    ).toEqual(["FieldValueForbidden"]);
  });
});

describe("Events", () => {
  it("core/v1: involved object namespace must match; new-style events need reporting fields", () => {
    const ok = obj("Event", {
      involvedObject: { kind: "Pod", name: "p", namespace: "default" },
      reason: "Started",
    });
    expect(validate(coreEventDefinition, ok)).toEqual([]);
    const mismatch = obj("Event", {
      involvedObject: { kind: "Pod", name: "p", namespace: "other" },
    });
    expect(validate(coreEventDefinition, mismatch).map((c) => c.field)).toEqual([
      "involvedObject.namespace",
    ]);
    const newStyle = obj("Event", {
      involvedObject: { kind: "Pod", name: "p", namespace: "default" },
      eventTime: "2024-01-01T00:00:00.000000Z",
    });
    expect(validate(coreEventDefinition, newStyle).map((c) => c.field)).toEqual(
      expect.arrayContaining(["reportingComponent", "reportingInstance", "action", "reason"]),
    );
    const sel = coreEventDefinition.strategy.selectableFields ?? {};
    expect(sel["involvedObject.name"]?.(ok)).toBe("p");
    expect(sel.reason?.(ok)).toBe("Started");
    expect(sel.source?.(obj("Event", { reportingComponent: "ctl" }))).toBe("ctl");
    expect(coreEventDefinition.names.shortNames).toEqual(["ev"]);
  });

  it("events.k8s.io/v1: strict on create, immutable on update", () => {
    const good = {
      eventTime: "2024-01-01T00:00:00.000000Z",
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-1",
      action: "Sync",
      reason: "Synced",
      type: "Normal",
      regarding: { kind: "Pod", name: "p", namespace: "default" },
      note: "ok",
    };
    const e = obj("Event", good);
    expect(validate(eventsV1EventDefinition, e)).toEqual([]);
    const bad = obj("Event", { ...good, type: "Odd", deprecatedCount: 3, series: { count: 1 } });
    expect(
      validate(eventsV1EventDefinition, bad)
        .map((c) => c.field)
        .sort(),
    ).toEqual(["deprecatedCount", "series.count", "series.lastObservedTime", "type"].sort());
    const updated = obj("Event", {
      ...good,
      note: "changed",
      series: { count: 2, lastObservedTime: "2024-01-01T00:00:01.000000Z" },
    });
    expect(validate(eventsV1EventDefinition, updated, e).map((c) => c.field)).toEqual(["note"]);
  });
});

describe("create on update", () => {
  it("is allowed for Events and Leases only, as in Kubernetes", () => {
    const allowed = [
      configMapDefinition,
      coreEventDefinition,
      eventsV1EventDefinition,
      leaseDefinition,
      namespaceDefinition,
      secretDefinition,
      serviceAccountDefinition,
    ]
      .filter((d) => d.strategy.allowCreateOnUpdate === true)
      .map((d) => `${d.names.plural}.${d.group}`);
    expect(allowed.sort()).toEqual([
      "events.",
      "events.events.k8s.io",
      "leases.coordination.k8s.io",
    ]);
  });
});
