import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { compareResourceVersions } from "../../packages/runtime/src/cache/informer.ts";
import {
  CONTROLLER_UID_INDEX,
  keyOf,
  NAMESPACE_INDEX,
  ObjectStore,
  OWNER_UID_INDEX,
} from "../../packages/runtime/src/cache/object-store.ts";

function obj(
  name: string,
  namespace: string | undefined,
  rv: string,
  extra: Partial<KubeObject["metadata"]> = {},
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, resourceVersion: rv, ...extra },
    data: { k: "v" },
  };
}

describe("ObjectStore", () => {
  it("deep-freezes what it stores", () => {
    const s = new ObjectStore<KubeObject>();
    s.upsert(obj("a", "ns", "1", { labels: { x: "y" } }));
    const got = s.get("ns/a")!;
    expect(Object.isFrozen(got)).toBe(true);
    expect(() => {
      (got.metadata.labels as Record<string, string>).x = "z";
    }).toThrow(TypeError);
    expect(() => {
      (got.data as Record<string, string>).k = "changed";
    }).toThrow(TypeError);
    expect(s.get("ns/a")?.metadata.labels?.x).toBe("y");
  });

  it("keeps the built-in indexes in step with upserts and deletes", () => {
    const s = new ObjectStore<KubeObject>();
    const owner = (uid: string, controller = false) => ({
      apiVersion: "v1",
      kind: "X",
      name: uid,
      uid,
      controller,
    });
    s.upsert(obj("a", "one", "1", { ownerReferences: [owner("u1", true), owner("u2")] }));
    s.upsert(obj("b", "one", "2", { ownerReferences: [owner("u2")] }));
    s.upsert(obj("c", "two", "3"));
    s.upsert(obj("cluster", undefined, "4"));
    const names = (xs: KubeObject[]) => xs.map((o) => o.metadata.name).sort();
    expect(names(s.byIndex(NAMESPACE_INDEX, "one"))).toEqual(["a", "b"]);
    expect(names(s.byIndex(OWNER_UID_INDEX, "u2"))).toEqual(["a", "b"]);
    expect(names(s.byIndex(CONTROLLER_UID_INDEX, "u1"))).toEqual(["a"]);
    expect(s.byIndex(CONTROLLER_UID_INDEX, "u2")).toEqual([]);
    // Move a to another namespace's worth of owners: the old index entries go.
    s.upsert(obj("a", "one", "5", { ownerReferences: [owner("u3", true)] }));
    expect(names(s.byIndex(OWNER_UID_INDEX, "u2"))).toEqual(["b"]);
    expect(names(s.byIndex(CONTROLLER_UID_INDEX, "u3"))).toEqual(["a"]);
    s.delete("one/b");
    expect(s.byIndex(OWNER_UID_INDEX, "u2")).toEqual([]);
    expect(s.indexValues(OWNER_UID_INDEX)).toEqual(["u3"]);
    expect(() => s.byIndex("nope", "x")).toThrow(/no index/);
  });

  it("builds a late index over what it holds; an index that throws indexes nothing", () => {
    const s = new ObjectStore<KubeObject>();
    s.upsert(obj("a", "n", "1", { labels: { app: "web" } }));
    s.upsert(obj("b", "n", "2", { labels: { app: "db" } }));
    s.addIndex("app", (o) => [o.metadata.labels?.app ?? ""]);
    expect(s.byIndex("app", "web").map(keyOf)).toEqual(["n/a"]);
    s.addIndex("boom", () => {
      throw new Error("bad index");
    });
    s.upsert(obj("c", "n", "3"));
    expect(s.byIndex("boom", "x")).toEqual([]);
    expect(s.size).toBe(3);
  });

  it("replace reports exactly the difference and the indexes match a fresh store", () => {
    const arbObjs = fc.uniqueArray(
      fc.record({
        name: fc.constantFrom("a", "b", "c", "d", "e", "f"),
        ns: fc.constantFrom("x", "y"),
        rv: fc.constantFrom("1", "2", "3"),
      }),
      { selector: (o) => `${o.ns}/${o.name}` },
    );
    fc.assert(
      fc.property(arbObjs, arbObjs, (before, after) => {
        const s = new ObjectStore<KubeObject>();
        for (const o of before) s.upsert(obj(o.name, o.ns, o.rv));
        const r = s.replace(after.map((o) => obj(o.name, o.ns, o.rv)));
        const beforeByKey = new Map(before.map((o) => [`${o.ns}/${o.name}`, o.rv]));
        const afterByKey = new Map(after.map((o) => [`${o.ns}/${o.name}`, o.rv]));
        const added = [...afterByKey.keys()].filter((k) => !beforeByKey.has(k)).sort();
        const deleted = [...beforeByKey.keys()].filter((k) => !afterByKey.has(k)).sort();
        const updated = [...afterByKey]
          .filter(([k, rv]) => beforeByKey.has(k) && beforeByKey.get(k) !== rv)
          .map(([k]) => k)
          .sort();
        expect(r.added.map(keyOf).sort()).toEqual(added);
        expect(r.deleted.map(keyOf).sort()).toEqual(deleted);
        expect(r.updated.map(([, n]) => keyOf(n)).sort()).toEqual(updated);
        expect([...s.keys()].sort()).toEqual([...afterByKey.keys()].sort());
        for (const ns of ["x", "y"]) {
          expect(s.byIndex(NAMESPACE_INDEX, ns).map(keyOf).sort()).toEqual(
            [...afterByKey.keys()].filter((k) => k.startsWith(`${ns}/`)).sort(),
          );
        }
      }),
    );
  });
});

describe("compareResourceVersions", () => {
  it("orders decimal versions numerically, whatever their length", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 80n }),
        fc.bigInt({ min: 0n, max: 2n ** 80n }),
        (a, b) => {
          const c = compareResourceVersions(a.toString(), b.toString());
          expect(Math.sign(c!)).toBe(a < b ? -1 : a > b ? 1 : 0);
        },
      ),
    );
    expect(compareResourceVersions("abc", "abc")).toBe(0);
    expect(compareResourceVersions("abc", "12")).toBeUndefined();
  });
});
