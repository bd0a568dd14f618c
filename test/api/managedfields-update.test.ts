import type { KubeObject } from "@setpoint/api";
import {
  decodeManagedFields,
  isResetManagedFields,
  MAX_UPDATE_MANAGERS,
  updateManagedFields,
} from "@setpoint/api/managedfields";
import { describe, expect, it } from "vitest";
import { API_VERSION, at, config, Server, schema, spec } from "./managedfields-helpers.ts";

describe("updateManagedFields", () => {
  it("on create, records every field the object sets, with the . marker on nodes the write created", () => {
    const s = new Server();
    s.update("kubectl-create", () =>
      config(
        { spec: { replicas: 1, ports: [{ port: 80, protocol: "TCP" }] } },
        { labels: { app: "x" } },
      ),
    );
    expect(s.entries()).toEqual([
      {
        manager: "kubectl-create",
        operation: "Update",
        apiVersion: API_VERSION,
        time: at(1),
        fieldsType: "FieldsV1",
        fieldsV1: expect.anything(),
      },
    ]);
    expect(JSON.stringify(s.entries()[0].fieldsV1)).toBe(
      '{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{".":{},"f:ports":{".":{},"k:{\\"port\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:port":{},"f:protocol":{}}},"f:replicas":{}}}',
    );
  });

  it("gives the fields a write changes to the writer, taking them from other managers", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1, paused: false } }), "alice");
    s.update("hpa", (o) => ({ ...o!, spec: { ...spec(o), replicas: 3 } }));
    expect(s.owned("alice")).toEqual([".spec.paused"]);
    expect(s.owned("hpa")).toEqual([".spec.replicas"]);
    expect(s.entry("hpa")?.operation).toBe("Update");
  });

  it("removes fields a write deletes from every manager", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1, paused: false } }), "alice");
    s.update("ctl", (o) => ({ ...o!, spec: { replicas: 1 } }));
    expect(s.owned("alice")).toEqual([".spec.replicas"]);
    expect(s.entry("ctl")).toBeUndefined();
  });

  it("changes nothing, times included, when the write changes no field", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1, containers: [{ name: "a" }, { name: "b" }] } }), "alice");
    const before = structuredClone(s.entries());
    // a reordered keyed list and new system metadata are no change of fields
    s.update("ctl", (o) => ({
      ...o!,
      metadata: { ...o!.metadata, generation: 7, resourceVersion: "99" },
      spec: { ...spec(o), containers: [{ name: "b" }, { name: "a" }] },
    }));
    expect(s.entries()).toEqual(before);
  });

  it("accumulates a manager's updates in one entry and moves its time", () => {
    const s = new Server();
    s.update("ctl", () => config({ spec: { replicas: 1 } }));
    s.update("ctl", (o) => ({ ...o!, spec: { ...spec(o), paused: true } }));
    expect(s.entries()).toHaveLength(1);
    expect(s.owned("ctl")).toEqual([".spec", ".spec.paused", ".spec.replicas"]);
    expect(s.entry("ctl")?.time).toBe(at(2));
  });

  it("keeps separate entries per apiVersion and per subresource", () => {
    const s = new Server();
    s.update("ctl", () => config({ spec: { replicas: 1 } }));
    s.update("ctl", (o) => ({ ...o!, spec: { ...spec(o), paused: true } }), {
      apiVersion: "example.com/v2",
    });
    s.update("ctl", (o) => ({ ...o!, status: { ready: 1 } }), { subresource: "status" });
    expect(s.entries().map((e) => [e.apiVersion, e.subresource ?? ""])).toEqual([
      [API_VERSION, ""],
      ["example.com/v2", ""],
      [API_VERSION, "status"],
    ]);
    expect(s.owned("ctl", "Update", "status")).toEqual([".status", ".status.ready"]);
  });

  it("lets a write replace managedFields with valid ones of its own", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    const replacement = [
      {
        manager: "bob",
        operation: "Apply" as const,
        apiVersion: API_VERSION,
        time: at(0),
        fieldsType: "FieldsV1" as const,
        fieldsV1: { "f:spec": { "f:replicas": {} } },
      },
    ];
    s.update("anyone", (o) => ({
      ...o!,
      metadata: { ...o!.metadata, managedFields: replacement },
    }));
    expect(s.entries()).toEqual(replacement);
  });

  it("falls back to the live managedFields when the request's are absent or invalid", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    const live = structuredClone(s.entries());
    s.update("ctl", (o) => {
      const { managedFields: _, ...metadata } = o!.metadata;
      return { ...o!, metadata };
    });
    expect(s.entries()).toEqual(live);
    s.update("ctl", (o) => ({
      ...o!,
      metadata: { ...o!.metadata, managedFields: [{ manager: "x", operation: "Bogus" }] as never },
    }));
    expect(s.entries()).toEqual(live);
  });

  it("resets managedFields on [] or [{}], after which updates are not tracked", () => {
    for (const reset of [[], [{}]]) {
      const s = new Server();
      s.apply(config({ spec: { replicas: 1 } }), "alice");
      s.update("ctl", (o) => ({
        ...o!,
        spec: { replicas: 2 },
        metadata: { ...o!.metadata, managedFields: reset },
      }));
      expect(s.obj?.metadata.managedFields).toBeUndefined();
      s.update("ctl", (o) => ({ ...o!, spec: { replicas: 3 } }));
      expect(s.obj?.metadata.managedFields).toBeUndefined();
      // the next apply starts tracking again (existing fields go to before-first-apply)
      s.apply(config({ spec: { paused: true } }), "alice");
      expect(s.owned("before-first-apply")).toContain(".spec.replicas");
      expect(s.owned("alice")).toEqual([".spec.paused"]);
    }
    expect(isResetManagedFields([{ manager: "" }])).toBe(true);
    expect(isResetManagedFields([{ manager: "x" }])).toBe(false);
    expect(isResetManagedFields(undefined)).toBe(false);
  });

  it("ignores managedFields sent through a subresource", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    const live = structuredClone(s.entries());
    s.update("ctl", (o) => ({ ...o!, metadata: { ...o!.metadata, managedFields: [] } }), {
      subresource: "status",
    });
    expect(s.entries()).toEqual(live);
  });

  it("does not start tracking an existing object that has no managedFields", () => {
    const live: KubeObject = { ...config({ spec: { replicas: 1 } }) };
    live.metadata.uid = "u";
    const next = { ...live, spec: { replicas: 2 } };
    const opts = { manager: "ctl", apiVersion: API_VERSION, time: at(1) };
    expect(updateManagedFields(live, next, schema, opts)).toEqual([]);
    // a create is always tracked
    expect(updateManagedFields(undefined, next, schema, opts)).toHaveLength(1);
  });

  it(`merges the oldest of more than ${MAX_UPDATE_MANAGERS} Update entries into ancient-changes`, () => {
    const s = new Server();
    s.update("m0", () => config({ spec: { config: { k0: 0 } } }));
    for (let i = 1; i <= MAX_UPDATE_MANAGERS + 2; i++) {
      s.update(`m${i}`, (o) => ({ ...o!, spec: { config: { ...spec(o).config, [`k${i}`]: i } } }));
    }
    const updaters = s.entries().filter((e) => e.operation === "Update");
    expect(updaters).toHaveLength(MAX_UPDATE_MANAGERS);
    const ancient = s.entry("ancient-changes");
    expect(ancient?.apiVersion).toBe(API_VERSION);
    expect(s.owned("ancient-changes")).toEqual(
      expect.arrayContaining([".spec", ".spec.config", ".spec.config.k0", ".spec.config.k3"]),
    );
    // each update past the cap folded the oldest entry into the bucket: m0 to m3 are gone
    expect(s.entry("m3")).toBeUndefined();
    expect(s.owned("m4")).toEqual([".spec.config.k4"]);
    expect(s.entry(`m${MAX_UPDATE_MANAGERS + 2}`)).toBeDefined();
  });

  it("records live duplicates as one field and survives them", () => {
    const s = new Server();
    s.update("ctl", () =>
      config({
        spec: {
          containers: [
            { name: "a", image: "1" },
            { name: "a", image: "2" },
          ],
        },
      }),
    );
    expect(s.owned("ctl")).toEqual([
      ".spec",
      ".spec.containers",
      '.spec.containers[k:{"name":"a"}]',
    ]);
    s.update("ctl", (o) => ({ ...o!, spec: { containers: [{ name: "a", image: "3" }] } }));
    expect(s.owned("ctl")).toContain('.spec.containers[k:{"name":"a"}].image');
  });

  it("decodes what it encodes", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    s.update("ctl", (o) => ({ ...o!, status: { ready: 1 } }), { subresource: "status" });
    const m = decodeManagedFields(s.entries());
    expect([...m.values()].map((e) => [e.manager, e.operation, e.subresource])).toEqual([
      ["alice", "Apply", undefined],
      ["ctl", "Update", "status"],
    ]);
    expect(() =>
      decodeManagedFields([{ operation: "Apply", apiVersion: "v1", fieldsType: "FieldsV2" }]),
    ).toThrow(/invalid fieldsType "FieldsV2"/);
    expect(() => decodeManagedFields([{ operation: "Apply", fieldsType: "FieldsV1" }])).toThrow(
      /apiVersion must not be empty/,
    );
  });
});
