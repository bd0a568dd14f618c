import { describe, expect, it } from "vitest";
import { DecodedObjects } from "../../src/apiserver/store/decoded-objects.ts";

const obj = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });

describe("DecodedObjects", () => {
  it("gives a private copy of the object kept at that key and revision only", () => {
    const kept = new DecodedObjects();
    kept.set("/a", 5, obj("a"), undefined, 10);
    const copy = kept.get("/a", 5, undefined);
    expect(copy).toEqual(obj("a"));
    if (copy) copy.metadata.name = "changed";
    expect(kept.get("/a", 5, undefined)).toEqual(obj("a"));
    expect(kept.get("/a", 6, undefined)).toBeUndefined();
    expect(kept.get("/a", 5, () => {})).toBeUndefined();
  });

  it("gives the newest object kept at a key, as a private copy, with its revision", () => {
    const kept = new DecodedObjects();
    expect(kept.latest("/a", undefined)).toBeUndefined();
    kept.set("/a", 5, obj("a"), undefined, 10);
    kept.set("/a", 7, obj("a7"), undefined, 10);
    const newest = kept.latest("/a", undefined);
    expect(newest).toEqual({ revision: 7, obj: obj("a7") });
    if (newest) newest.obj.metadata.name = "changed";
    expect(kept.latest("/a", undefined)?.obj).toEqual(obj("a7"));
    expect(kept.latest("/a", () => {})).toBeUndefined();
    kept.delete("/a");
    expect(kept.latest("/a", undefined)).toBeUndefined();
  });

  it("forgets the least recently used objects past the byte bound", () => {
    const kept = new DecodedObjects(100, 1_000);
    kept.set("/a", 1, obj("a"), undefined, 400);
    kept.set("/b", 1, obj("b"), undefined, 400);
    kept.get("/a", 1, undefined); // a is now the most recently used
    kept.set("/c", 1, obj("c"), undefined, 400);
    expect(kept.get("/b", 1, undefined)).toBeUndefined();
    expect(kept.get("/a", 1, undefined)).toBeDefined();
    expect(kept.get("/c", 1, undefined)).toBeDefined();
    expect(kept.stats).toEqual({ objects: 2, bytes: 800 });
  });

  it("does not keep an object larger than the whole bound, and counts replaced and deleted ones out", () => {
    const kept = new DecodedObjects(100, 1_000);
    kept.set("/a", 1, obj("a"), undefined, 300);
    kept.set("/big", 1, obj("big"), undefined, 1_001);
    expect(kept.get("/big", 1, undefined)).toBeUndefined();
    expect(kept.get("/a", 1, undefined)).toBeDefined();
    kept.set("/a", 2, obj("a"), undefined, 500);
    expect(kept.stats).toEqual({ objects: 1, bytes: 500 });
    kept.delete("/a");
    kept.delete("/a");
    expect(kept.stats).toEqual({ objects: 0, bytes: 0 });
  });

  it("forgets the oldest past the count bound", () => {
    const kept = new DecodedObjects(2, 1_000_000);
    for (const k of ["/a", "/b", "/c"]) kept.set(k, 1, obj(k), undefined, 1);
    expect(kept.get("/a", 1, undefined)).toBeUndefined();
    expect(kept.stats.objects).toBe(2);
  });
});
