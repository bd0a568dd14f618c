import { type KubeObject, StatusError } from "@setpoint/api";
import { applyServerSide, FieldSet, LAST_APPLIED_ANNOTATION } from "@setpoint/api/managedfields";
import { describe, expect, it } from "vitest";
import { zipListKeys } from "../../packages/api/src/managedfields/merge.ts";
import { API_VERSION, at, config, paths, Server, schema, spec } from "./managedfields-helpers.ts";

function conflictOf(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    if (e instanceof StatusError) return e;
    throw e;
  }
  throw new Error("expected a StatusError");
}

describe("server-side apply: ownership", () => {
  it("creates the object; the applier owns exactly its configuration's fields", () => {
    const s = new Server();
    const out = s.apply(
      config(
        { spec: { replicas: 2, ports: [{ port: 80, name: "http" }] } },
        { labels: { app: "web" } },
      ),
      "alice",
    );
    expect(spec(out)).toEqual({ replicas: 2, ports: [{ port: 80, name: "http" }] });
    expect(out.metadata.managedFields).toEqual([
      {
        manager: "alice",
        operation: "Apply",
        apiVersion: API_VERSION,
        time: at(1),
        fieldsType: "FieldsV1",
        fieldsV1: expect.anything(),
      },
    ]);
    // name, namespace, apiVersion and kind are never tracked; the port's key uses the
    // schema default for the missing protocol.
    expect(JSON.stringify(out.metadata.managedFields?.[0].fieldsV1)).toBe(
      '{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:ports":{"k:{\\"port\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:name":{},"f:port":{}}},"f:replicas":{}}}',
    );
  });

  it("applying an identical configuration returns an object deep-equal to live (no write)", () => {
    const s = new Server();
    const cfg = config({
      spec: { replicas: 2, hosts: ["a"], containers: [{ name: "c", image: "i" }] },
    });
    const first = s.apply(cfg, "alice");
    const again = applyServerSide(first, cfg, schema, {
      manager: "alice",
      apiVersion: API_VERSION,
      time: at(99),
      force: false,
    });
    expect(again).toEqual(first);
    expect(JSON.stringify(again)).toBe(JSON.stringify(first));
    expect(again).not.toBe(first);
  });

  it("keeps the live object's system metadata whatever the configuration says", () => {
    const s = new Server();
    const cfg = config({ spec: { replicas: 1 } });
    const live = s.apply(cfg, "alice");
    const out = applyServerSide(
      live,
      config({ spec: { replicas: 1 } }, { creationTimestamp: null, uid: "forged", generation: 9 }),
      schema,
      { manager: "alice", apiVersion: API_VERSION, time: at(50), force: false },
    );
    expect(out).toEqual(live);
  });

  it("moves the applier's time only when the object changes", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    expect(s.entry("alice")?.time).toBe(at(1));
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    expect(s.entry("alice")?.time).toBe(at(1));
    s.apply(config({ spec: { replicas: 2 } }), "alice");
    expect(s.entry("alice")?.time).toBe(at(3));
  });
});

describe("server-side apply: conflicts", () => {
  it("applying a different value to another applier's field is a 409 with Kubernetes' message", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "alice");
    const before = s.obj;
    const err = conflictOf(() => s.apply(config({ spec: { replicas: 3 } }), "bob"));
    expect(err.code).toBe(409);
    expect(err.status.reason).toBe("Conflict");
    expect(err.status.message).toBe(
      'Apply failed with 1 conflict: conflict with "alice": .spec.replicas',
    );
    expect(err.status.details?.causes).toEqual([
      { reason: "FieldManagerConflict", message: 'conflict with "alice"', field: ".spec.replicas" },
    ]);
    expect(s.obj).toBe(before);
  });

  it("conflicts with Update managers too, naming their apiVersion", () => {
    const s = new Server();
    s.update("kubectl-client-side-apply", () => config({ spec: { replicas: 1 } }), {
      apiVersion: API_VERSION,
    });
    const err = conflictOf(() => s.apply(config({ spec: { replicas: 3 } }), "bob"));
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using ${API_VERSION}: .spec.replicas`,
    );
    expect(err.status.details?.causes?.[0].message).toBe(
      `conflict with "kubectl-client-side-apply" using ${API_VERSION}`,
    );
  });

  it("groups several conflicts by manager, managers sorted", () => {
    const s = new Server();
    s.apply(config({ spec: { paused: false, replicas: 1 } }), "zed");
    s.update("ctl", (o) => ({
      ...o!,
      spec: { ...spec(o), args: ["x"], ports: [{ port: 1, protocol: "UDP", name: "a" }] },
    }));
    const err = conflictOf(() =>
      s.apply(
        config({
          spec: {
            paused: true,
            replicas: 2,
            args: ["y"],
            ports: [{ port: 1, protocol: "UDP", name: "b" }],
          },
        }),
        "bob",
      ),
    );
    expect(err.status.message).toBe(
      [
        'Apply failed with 4 conflicts: conflicts with "ctl" using example.com/v1:',
        "- .spec.args",
        '- .spec.ports[port=1,protocol="UDP"].name',
        'conflicts with "zed":',
        "- .spec.paused",
        "- .spec.replicas",
      ].join("\n"),
    );
    expect(err.status.details?.causes?.map((c) => c.field)).toEqual([
      ".spec.args",
      '.spec.ports[port=1,protocol="UDP"].name',
      ".spec.paused",
      ".spec.replicas",
    ]);
  });

  it("force takes the field from its owner", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1, paused: true } }), "alice");
    const out = s.apply(config({ spec: { replicas: 3 } }), "bob", { force: true });
    expect(spec(out).replicas).toBe(3);
    expect(s.owned("alice")).toEqual([".spec.paused"]);
    expect(s.owned("bob")).toEqual([".spec.replicas"]);
  });

  it("applying the same value as another manager shares the field; it stays until nobody owns it", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 2, paused: true } }), "alice");
    s.apply(config({ spec: { replicas: 2 } }), "bob");
    expect(s.owned("alice")).toEqual([".spec.paused", ".spec.replicas"]);
    expect(s.owned("bob")).toEqual([".spec.replicas"]);
    // alice leaves replicas out: bob still owns it, so it stays
    let out = s.apply(config({ spec: { paused: true } }), "alice");
    expect(spec(out)).toEqual({ replicas: 2, paused: true });
    // now bob is the sole owner and may change it without conflict
    out = s.apply(config({ spec: { replicas: 5 } }), "bob");
    expect(spec(out).replicas).toBe(5);
    // and bob leaving it out removes it
    out = s.apply(config(), "bob");
    expect(spec(out)).toEqual({ paused: true });
    expect(s.entry("bob")).toBeUndefined();
  });

  it("does not conflict on fields it does not change, whoever owns them", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 2 } }), "alice");
    s.update("hpa", (o) => ({ ...o!, spec: { ...spec(o), replicas: 4 } }));
    expect(s.owned("alice")).toEqual([]);
    const out = s.apply(config({ spec: { paused: true } }), "alice");
    expect(spec(out)).toEqual({ replicas: 4, paused: true });
    expect(s.owned("hpa", "Update")).toEqual([".spec.replicas"]);
  });
});

describe("server-side apply: removal", () => {
  it("removes a field the applier alone owned and now leaves out", () => {
    const s = new Server();
    s.apply(
      config({ spec: { replicas: 1, paused: true } }, { labels: { a: "1", b: "2" } }),
      "alice",
    );
    const out = s.apply(config({ spec: { replicas: 1 } }, { labels: { a: "1" } }), "alice");
    expect(spec(out)).toEqual({ replicas: 1 });
    expect(out.metadata.labels).toEqual({ a: "1" });
  });

  it("keeps fields an updater owns, and fields nobody applied", () => {
    const s = new Server();
    s.apply(config({}, { labels: { a: "1" } }), "alice");
    s.update("ctl", (o) => ({
      ...o!,
      metadata: { ...o!.metadata, labels: { ...o!.metadata.labels, b: "2" } },
    }));
    const out = s.apply(config({ spec: { replicas: 1 } }), "alice");
    expect(out.metadata.labels).toEqual({ b: "2" });
    expect(spec(out)).toEqual({ replicas: 1 });
  });

  it("removes a keyed item the applier alone owned, keeps an item another manager shares", () => {
    const s = new Server();
    s.apply(
      config({
        spec: {
          containers: [
            { name: "a", image: "ia" },
            { name: "b", image: "ib" },
          ],
        },
      }),
      "alice",
    );
    s.apply(config({ spec: { containers: [{ name: "b", image: "ib" }] } }), "bob");
    const out = s.apply(config({ spec: { containers: [] } }), "alice");
    expect(spec(out).containers).toEqual([{ name: "b", image: "ib" }]);
    expect(s.owned("bob")).toEqual([
      '.spec.containers[k:{"name":"b"}]',
      '.spec.containers[k:{"name":"b"}].image',
      '.spec.containers[k:{"name":"b"}].name',
    ]);
  });

  it("removes a whole subtree when nobody owns anything in it any more", () => {
    const s = new Server();
    s.apply(
      config({ spec: { resources: { web: { cpu: "1", memory: "1Gi" } }, replicas: 1 } }),
      "alice",
    );
    const out = s.apply(config({ spec: { replicas: 1 } }), "alice");
    expect(spec(out)).toEqual({ replicas: 1 });
  });

  it("applying an empty configuration as the sole manager removes everything it applied", () => {
    const s = new Server();
    s.apply(
      config(
        { spec: { replicas: 1, hosts: ["x"], ports: [{ port: 80 }] } },
        { labels: { a: "b" } },
      ),
      "alice",
    );
    const out = s.apply(config(), "alice");
    expect(out.spec).toBeUndefined();
    expect(out.metadata.labels).toBeUndefined();
    expect(out.metadata.managedFields).toBeUndefined();
    expect(out.metadata.name).toBe("web");
  });
});

describe("server-side apply: merging per the schema", () => {
  it("merges keyed lists by their list-map-keys, item fields granularly", () => {
    const s = new Server();
    s.apply(
      config({
        spec: { ports: [{ port: 80, name: "http" }], containers: [{ name: "c", image: "i1" }] },
      }),
      "alice",
    );
    const out = s.apply(
      config({
        spec: {
          ports: [
            { port: 443, protocol: "TCP", name: "https" },
            { port: 80, protocol: "TCP" },
          ],
          containers: [{ name: "c", env: [{ name: "A", value: "1" }] }],
        },
      }),
      "bob",
    );
    expect(spec(out).ports).toEqual([
      { port: 443, protocol: "TCP", name: "https" },
      { port: 80, name: "http", protocol: "TCP" },
    ]);
    expect(spec(out).containers).toEqual([
      { name: "c", image: "i1", env: [{ name: "A", value: "1" }] },
    ]);
    // the item is owned by both; each owns its own fields inside it
    expect(s.owned("alice")).toContain('.spec.containers[k:{"name":"c"}].image');
    expect(s.owned("bob")).toContain('.spec.containers[k:{"name":"c"}].env[k:{"name":"A"}].value');
    expect(s.owned("bob")).not.toContain('.spec.containers[k:{"name":"c"}].image');
    // protocol defaulted in the key, set explicitly by bob: same item, owned by bob too
    expect(s.owned("bob")).toContain('.spec.ports[k:{"port":80,"protocol":"TCP"}].protocol');
  });

  it("orders merged lists as Kubernetes does", () => {
    const s = new Server();
    s.apply(config({ spec: { containers: [{ name: "a" }, { name: "b" }] } }), "alice");
    const out = s.apply(config({ spec: { containers: [{ name: "a" }, { name: "c" }] } }), "bob");
    expect(spec(out).containers.map((c: { name: string }) => c.name)).toEqual(["a", "b", "c"]);
    const names = (l: string, r: string) =>
      zipListKeys([...l], [...r])
        .map((st) => (st.r === undefined ? l[st.l!] : r[st.r]))
        .join("");
    expect(names("ab", "ca")).toBe("cab");
    expect(names("abc", "ca")).toBe("bca");
    expect(names("abcgf", "cdef")).toBe("abcgdef");
    expect(names("abcd", "defa")).toBe("bcdefa");
  });

  it("merges set lists as unions keyed by value", () => {
    const s = new Server();
    s.apply(config({ spec: { hosts: ["h1", "h2"] } }), "alice");
    let out = s.apply(config({ spec: { hosts: ["h2", "h3"] } }), "bob");
    expect(spec(out).hosts).toEqual(["h1", "h2", "h3"]);
    expect(s.owned("alice")).toEqual(['.spec.hosts[v:"h1"]', '.spec.hosts[v:"h2"]']);
    out = s.apply(config({ spec: { hosts: [] } }), "alice");
    expect(spec(out).hosts).toEqual(["h2", "h3"]);
  });

  it("treats atomic lists (marked or unmarked) as one field, replaced whole", () => {
    const s = new Server();
    s.apply(config({ spec: { args: ["x", "y"], tolerations: [{ key: "k" }] } }), "alice");
    expect(s.owned("alice")).toEqual([".spec.args", ".spec.tolerations"]);
    const err = conflictOf(() => s.apply(config({ spec: { args: ["z"] } }), "bob"));
    expect(err.status.details?.causes?.map((c) => c.field)).toEqual([".spec.args"]);
    const out = s.apply(config({ spec: { args: ["z"], tolerations: [{ key: "k" }] } }), "bob", {
      force: true,
    });
    expect(spec(out).args).toEqual(["z"]);
    expect(s.owned("alice")).toEqual([".spec.tolerations"]);
    expect(s.owned("bob")).toEqual([".spec.args", ".spec.tolerations"]);
  });

  it("treats atomic maps as one field, replaced whole", () => {
    const s = new Server();
    s.apply(config({ spec: { selector: { matchLabels: { a: "1" } } } }), "alice");
    expect(JSON.stringify(s.entry("alice")?.fieldsV1)).toBe('{"f:spec":{"f:selector":{}}}');
    const err = conflictOf(() =>
      s.apply(config({ spec: { selector: { matchLabels: { b: "2" } } } }), "bob"),
    );
    expect(err.status.details?.causes?.[0].field).toBe(".spec.selector");
    const out = s.apply(config({ spec: { selector: { matchLabels: { b: "2" } } } }), "bob", {
      force: true,
    });
    expect(spec(out).selector).toEqual({ matchLabels: { b: "2" } });
  });

  it("treats preserve-unknown-fields maps and maps of structs granularly", () => {
    const s = new Server();
    s.apply(
      config({ spec: { config: { a: 1, nested: { x: 1 } }, resources: { web: { cpu: "1" } } } }),
      "alice",
    );
    const out = s.apply(
      config({
        spec: { config: { nested: { y: [1, 2] } }, resources: { web: { memory: "1Gi" } } },
      }),
      "bob",
    );
    expect(spec(out).config).toEqual({ a: 1, nested: { x: 1, y: [1, 2] } });
    expect(spec(out).resources).toEqual({ web: { cpu: "1", memory: "1Gi" } });
    // undeclared keys with fields below them are owned themselves too (the "." marker)
    expect(JSON.stringify(s.entry("bob")?.fieldsV1)).toBe(
      '{"f:spec":{"f:config":{"f:nested":{".":{},"f:y":{}}},"f:resources":{"f:web":{".":{},"f:memory":{}}}}}',
    );
  });
});

describe("server-side apply: objects without a schema", () => {
  it("merges maps key by key and replaces lists whole (every key its own field)", () => {
    const s = new Server({ type: "object", "x-kubernetes-preserve-unknown-fields": true });
    s.apply(config({ spec: { list: [1, 2], m: { a: 1 } } }), "alice");
    expect(JSON.stringify(s.entry("alice")?.fieldsV1)).toBe(
      '{"f:spec":{".":{},"f:list":{},"f:m":{".":{},"f:a":{}}}}',
    );
    const err = conflictOf(() => s.apply(config({ spec: { list: [3] } }), "bob"));
    expect(err.status.details?.causes?.[0].field).toBe(".spec.list");
    const out = s.apply(config({ spec: { list: [3], m: { b: 2 } } }), "bob", { force: true });
    expect(spec(out)).toEqual({ list: [3], m: { a: 1, b: 2 } });
  });
});

describe("server-side apply: status subresource", () => {
  it("keeps main-resource and status ownership apart", () => {
    const s = new Server();
    s.apply(config({ spec: { replicas: 1 } }), "user");
    // a controller writes status through /status (the caller keeps spec as it was)
    s.update("ctrl", (o) => ({ ...o!, status: { ready: 0 } }), { subresource: "status" });
    expect(s.entry("ctrl", "Update", "status")?.subresource).toBe("status");
    // the user applies spec again (the caller stripped status): no conflict, status untouched
    let out = s.apply(config({ spec: { replicas: 2 } }), "user");
    expect(out.status).toEqual({ ready: 0 });
    // the controller switches to applying status through /status: its own Update entry
    // is another manager, so changing that value conflicts with it...
    const statusCfg = config({
      status: { ready: 2, conditions: [{ type: "Ready", status: "True" }] },
    });
    const err = conflictOf(() => s.apply(statusCfg, "ctrl", { subresource: "status" }));
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "ctrl" with subresource "status" using ${API_VERSION}: .status.ready`,
    );
    // ...until it takes it over
    out = s.apply(statusCfg, "ctrl", { subresource: "status", force: true });
    expect(out.status).toEqual({ ready: 2, conditions: [{ type: "Ready", status: "True" }] });
    expect(s.entry("ctrl", "Apply")?.subresource).toBe("status");
    expect(s.owned("ctrl", "Apply")).toContain(".status.ready");
    // the same manager name on the main resource is a different manager
    out = s.apply(config({ spec: { paused: true } }), "ctrl");
    expect(s.owned("ctrl", "Apply", "status")).toContain(".status.ready");
    expect(s.entries().filter((e) => e.manager === "ctrl" && e.operation === "Apply")).toHaveLength(
      2,
    );
    // dropping a condition it applied through /status removes it
    out = s.apply(config({ status: { ready: 2 } }), "ctrl", { subresource: "status" });
    expect(out.status).toEqual({ ready: 2 });
    expect(spec(out)).toEqual({ replicas: 2, paused: true });
  });
});

describe("server-side apply: objects applied for the first time", () => {
  it("attributes existing fields to before-first-apply, which can conflict", () => {
    const s = new Server();
    const stored = s.update("creator", () => config({ spec: { replicas: 1, paused: false } }));
    // an object written before field tracking (or after a reset) has no managedFields
    delete stored.metadata.managedFields;
    const err = conflictOf(() => s.apply(config({ spec: { replicas: 2 } }), "alice"));
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "before-first-apply" using ${API_VERSION}: .spec.replicas`,
    );
    const out = s.apply(config({ spec: { replicas: 1 } }), "alice");
    // the map appeared in that update, so the updater owns it too (the "." marker)
    expect(s.owned("before-first-apply", "Update")).toEqual([
      ".spec",
      ".spec.paused",
      ".spec.replicas",
    ]);
    expect(s.owned("alice")).toEqual([".spec.replicas"]);
    expect(spec(out)).toEqual({ replicas: 1, paused: false });
  });
});

describe("server-side apply: bad configurations", () => {
  const opts = { manager: "m", apiVersion: API_VERSION, time: at(1), force: false };

  it("refuses managedFields in the configuration", () => {
    const err = conflictOf(() =>
      applyServerSide(undefined, config({}, { managedFields: [] }), schema, opts),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe("metadata.managedFields must be nil");
  });

  it("refuses a configuration of another version", () => {
    const err = conflictOf(() =>
      applyServerSide(undefined, { ...config(), apiVersion: "example.com/v2" }, schema, opts),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe(
      "Incorrect version specified in apply patch. Specified patch version: example.com/v2, expected: example.com/v1",
    );
  });

  it("refuses duplicate and unidentifiable list items, naming the path", () => {
    let err = conflictOf(() =>
      applyServerSide(
        undefined,
        config({ spec: { ports: [{ port: 80 }, { port: 80, protocol: "TCP" }] } }),
        schema,
        opts,
      ),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe(
      'failed to create typed patch object (default/web; example.com/v1, Kind=Widget): .spec.ports: duplicate entries for key [port=80,protocol="TCP"]',
    );
    err = conflictOf(() =>
      applyServerSide(
        undefined,
        config({ spec: { hosts: [{ a: 1 }], containers: [{ image: "x" }] } }),
        schema,
        opts,
      ),
    );
    expect(err.status.message).toBe(
      [
        "failed to create typed patch object (default/web; example.com/v1, Kind=Widget): errors:",
        "  .spec.hosts: element 0: associative list without keys has an element that's a map type",
        '  .spec.containers: element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn\'t have default values for any key fields)',
      ].join("\n"),
    );
  });

  it("accepts duplicates already in the live object, replacing them when the configuration names them", () => {
    const live: KubeObject = {
      ...config({
        spec: { containers: [{ name: "a", image: "1" }, { name: "a", image: "2" }, { name: "b" }] },
      }),
    };
    live.metadata.uid = "u";
    const out = applyServerSide(
      live,
      config({ spec: { containers: [{ name: "a", image: "3" }] } }),
      schema,
      {
        ...opts,
        force: true,
      },
    );
    expect(spec(out).containers).toEqual([{ name: "a", image: "3" }, { name: "b" }]);
  });
});

describe("client-side apply → server-side apply", () => {
  const CSA = "kubectl-client-side-apply";

  /** What kubectl's client-side apply writes: the object with its configuration in the annotation. */
  function csaObject(cfg: KubeObject): KubeObject {
    const obj = structuredClone(cfg);
    obj.metadata.annotations = {
      ...obj.metadata.annotations,
      [LAST_APPLIED_ANNOTATION]: `${JSON.stringify(cfg)}\n`,
    };
    return obj;
  }

  /** kubectl ≥ 1.26's managedFields migration patch, computed from the object as kubectl does. */
  function migratedManagedFields(obj: KubeObject): KubeObject["metadata"]["managedFields"] {
    const entries = structuredClone(obj.metadata.managedFields ?? []);
    const annotation = ["f:metadata", "f:annotations", `f:${LAST_APPLIED_ANNOTATION}`];
    const csaNames = new Set(
      entries
        .filter(
          (e) => e.operation === "Update" && FieldSet.fromFieldsV1(e.fieldsV1).has(annotation),
        )
        .map((e) => e.manager),
    );
    let target = entries.find(
      (e) => e.manager === "kubectl" && e.operation === "Apply" && !e.subresource,
    );
    let set = FieldSet.fromFieldsV1(target?.fieldsV1 ?? {});
    for (const e of entries) {
      if (e.operation === "Update" && csaNames.has(e.manager) && !e.subresource) {
        set = set.union(FieldSet.fromFieldsV1(e.fieldsV1));
      }
    }
    set = set.difference(FieldSet.of(annotation));
    if (!target) {
      target = {
        manager: "kubectl",
        operation: "Apply",
        apiVersion: API_VERSION,
        fieldsType: "FieldsV1",
      };
      entries.push(target);
    }
    target.fieldsV1 = set.toFieldsV1();
    return entries.filter(
      (e) => !(e.operation === "Update" && csaNames.has(e.manager) && !e.subresource),
    );
  }

  it("supports kubectl's upgrade: forgiven conflicts, annotation kept in sync, managedFields migrated", () => {
    const s = new Server();
    const v1 = config(
      { spec: { replicas: 2, hosts: ["a"] } },
      { labels: { app: "web", tier: "fe" } },
    );
    s.update(CSA, () => csaObject(v1));

    // kubectl apply --server-side with an edited manifest: replicas changed, tier label dropped.
    const v2 = config({ spec: { replicas: 3, hosts: ["a"] } }, { labels: { app: "web" } });
    let out = s.apply(v2, "kubectl");
    expect(spec(out).replicas).toBe(3); // the conflict with the CSA writer was forgiven
    expect(out.metadata.labels).toEqual({ app: "web", tier: "fe" }); // not ours yet: kept
    expect(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION]).toBe(
      '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"app":"web"},"name":"web","namespace":"default"},"spec":{"hosts":["a"],"replicas":3}}\n',
    );
    expect(s.owned(CSA, "Update")).not.toContain(".spec.replicas");

    // kubectl keeps the annotation owned by an applier...
    const annotationOnly = config(
      {},
      {
        annotations: {
          [LAST_APPLIED_ANNOTATION]: out.metadata.annotations?.[LAST_APPLIED_ANNOTATION],
        },
      },
    );
    s.apply(annotationOnly, "kubectl-last-applied");
    expect(s.owned("kubectl-last-applied")).toEqual([
      `.metadata.annotations.${LAST_APPLIED_ANNOTATION}`,
    ]);

    // ...then replaces managedFields with a JSON patch (a non-apply write)...
    const before = s.obj!;
    const wanted = migratedManagedFields(before);
    out = s.update(
      "kubectl",
      (o) => ({ ...o!, metadata: { ...o!.metadata, managedFields: wanted } }),
      {},
    );
    expect(out.metadata.managedFields).toEqual(wanted);
    expect(s.entry(CSA)).toBeUndefined();
    expect(s.owned("kubectl", "Apply")).toContain(".metadata.labels.tier");

    // ...and applies again: the dropped label is now removed.
    out = s.apply(v2, "kubectl");
    expect(out.metadata.labels).toEqual({ app: "web" });
    expect(spec(out)).toEqual({ replicas: 3, hosts: ["a"] });
    expect(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION]).toContain('"replicas":3');
  });

  it("forgives only conflicts on fields unchanged since the last client-side apply, only for kubectl", () => {
    const s = new Server();
    s.update(CSA, () => csaObject(config({ spec: { replicas: 2, paused: false } })));
    s.update("hpa", (o) => ({ ...o!, spec: { ...spec(o), replicas: 5 } }));
    // replicas changed since (hpa owns it): still a conflict; paused is forgiven
    let err = conflictOf(() => s.apply(config({ spec: { replicas: 3, paused: true } }), "kubectl"));
    expect(err.status.details?.causes?.map((c) => c.field)).toEqual([".spec.replicas"]);
    // another manager name gets no forgiveness
    err = conflictOf(() => s.apply(config({ spec: { paused: true } }), "helm"));
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "${CSA}" using ${API_VERSION}: .spec.paused`,
    );
    const out = s.apply(config({ spec: { paused: true } }), "kubectl");
    expect(spec(out)).toEqual({ replicas: 5, paused: true });
  });

  it("does not add or rewrite the annotation for other managers", () => {
    const s = new Server();
    s.update(CSA, () => csaObject(config({ spec: { replicas: 2 } })));
    const annotation = s.obj!.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
    const out = s.apply(config({ spec: { replicas: 2, paused: true } }), "helm");
    expect(out.metadata.annotations?.[LAST_APPLIED_ANNOTATION]).toBe(annotation);
    const t = new Server();
    const fresh = t.apply(config({ spec: { replicas: 1 } }), "kubectl");
    expect(fresh.metadata.annotations).toBeUndefined();
  });

  it("after the migration, applying again narrows ownership to the configuration, then is a no-op", () => {
    const s = new Server();
    s.update(CSA, () => csaObject(config({ spec: { replicas: 2 } })));
    s.apply(config({ spec: { replicas: 2 } }), "kubectl");
    const annotation = s.obj!.metadata.annotations?.[LAST_APPLIED_ANNOTATION];
    s.apply(
      config({}, { annotations: { [LAST_APPLIED_ANNOTATION]: annotation } }),
      "kubectl-last-applied",
    );
    const wanted = migratedManagedFields(s.obj!);
    s.update("kubectl", (o) => ({ ...o!, metadata: { ...o!.metadata, managedFields: wanted } }));
    const migrated = s.obj!;
    expect(paths(s.entry("kubectl", "Apply")?.fieldsV1)).toEqual([
      ".metadata.annotations",
      ".spec",
      ".spec.replicas",
    ]);
    // kubectl applies once more: only the ownership changes (to the configuration's fields)
    const out = s.apply(config({ spec: { replicas: 2 } }), "kubectl");
    expect({
      ...out,
      metadata: { ...out.metadata, managedFields: [], resourceVersion: "" },
    }).toEqual({
      ...migrated,
      metadata: { ...migrated.metadata, managedFields: [], resourceVersion: "" },
    });
    expect(paths(s.entry("kubectl", "Apply")?.fieldsV1)).toEqual([".spec.replicas"]);
    // from then on applying it is a no-op
    expect(s.apply(config({ spec: { replicas: 2 } }), "kubectl")).toBe(out);
  });
});
