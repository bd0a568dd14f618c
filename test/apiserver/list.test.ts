import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addWidgetType,
  configMap,
  eventually,
  type Harness,
  startHarness,
  widget,
} from "./harness.ts";

let h: Harness;
const P = "/api/v1/namespaces/ls/configmaps";

type Item = { metadata: { name: string; namespace?: string } };
const names = (body: { items: Item[] }) => body.items.map((i) => i.metadata.name);

beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("ls");
  await h.namespace("other");
  const seed: [string, Record<string, string>][] = [
    ["a1", { app: "web", tier: "front" }],
    ["a2", { app: "web", tier: "back" }],
    ["a3", { app: "db" }],
    ["a4", {}],
    ["a5", { app: "cache", tier: "back" }],
  ];
  for (const [n, labels] of seed) {
    const r = await h.post(P, configMap(n, {}, { labels }));
    expect(r.status).toBe(201);
  }
  await h.post(
    "/api/v1/namespaces/other/configmaps",
    configMap("o1", {}, { labels: { app: "web" } }),
  );
});
afterAll(async () => {
  await h.close();
});

describe("selectors", () => {
  it("filters by equality and set-based label selectors", async () => {
    const q = async (sel: string) =>
      names((await h.get(`${P}?labelSelector=${encodeURIComponent(sel)}`)).body);
    expect(await q("app=web")).toEqual(["a1", "a2"]);
    expect(await q("app!=web")).toEqual(["a3", "a4", "a5"]);
    expect(await q("app in (db,cache)")).toEqual(["a3", "a5"]);
    expect(await q("app notin (web)")).toEqual(["a3", "a4", "a5"]);
    expect(await q("tier")).toEqual(["a1", "a2", "a5"]);
    expect(await q("!tier")).toEqual(["a3", "a4"]);
    expect(await q("app=web,tier=back")).toEqual(["a2"]);
    const all = await h.get(`/api/v1/configmaps?labelSelector=app%3Dweb`);
    expect(all.body.items.map((i: Item) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual([
      "ls/a1",
      "ls/a2",
      "other/o1",
    ]);
  });

  it("filters by metadata.name, metadata.namespace and selectable fields", async () => {
    expect(names((await h.get(`${P}?fieldSelector=metadata.name%3Da3`)).body)).toEqual(["a3"]);
    expect(names((await h.get(`${P}?fieldSelector=metadata.name!%3Da3`)).body)).toEqual([
      "a1",
      "a2",
      "a4",
      "a5",
    ]);
    expect(
      names((await h.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dother")).body),
    ).toEqual(["o1"]);
    const W = "/apis/example.com/v1/namespaces/ls/widgets";
    await h.post(W, widget("red", { color: "red" }));
    await h.post(W, widget("plain", {}));
    expect(names((await h.get(`${W}?fieldSelector=spec.color%3Dblue`)).body)).toEqual(["plain"]);
    const bad = await h.get(`${W}?fieldSelector=spec.size%3D1`);
    expect(bad.status).toBe(400);
  });
});

describe("paging", () => {
  it("pages with limit and continue, consistently at the first page's revision", async () => {
    const first = await h.get(`${P}?limit=2`);
    expect(first.status).toBe(200);
    expect(names(first.body)).toEqual(["a1", "a2"]);
    expect(first.body.metadata.continue).toBeTruthy();
    expect(first.body.metadata.remainingItemCount).toBe(3);
    const rv = first.body.metadata.resourceVersion;

    // Changes after the first page do not show in later pages.
    await h.post(P, configMap("a0"));
    await h.post(P, configMap("a35"));
    await h.del(`${P}/a4`);

    const second = await h.get(`${P}?limit=2&continue=${first.body.metadata.continue}`);
    expect(second.status).toBe(200);
    expect(names(second.body)).toEqual(["a3", "a4"]);
    expect(second.body.metadata.resourceVersion).toBe(rv);
    const third = await h.get(`${P}?limit=2&continue=${second.body.metadata.continue}`);
    expect(names(third.body)).toEqual(["a5"]);
    expect(third.body.metadata.continue).toBeUndefined();

    // Restore for other tests.
    await h.del(`${P}/a0`);
    await h.del(`${P}/a35`);
    await h.post(P, configMap("a4"));
  });

  it("pages through a selector, possibly with short pages", async () => {
    const seen: string[] = [];
    let cont = "";
    for (let i = 0; i < 10; i++) {
      const r = await h.get(`${P}?limit=1&labelSelector=tier${cont ? `&continue=${cont}` : ""}`);
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(1);
      expect(r.body.metadata.remainingItemCount).toBeUndefined();
      seen.push(...names(r.body));
      cont = r.body.metadata.continue ?? "";
      if (!cont) break;
    }
    expect(seen).toEqual(["a1", "a2", "a5"]);
  });
});

describe("resourceVersion semantics", () => {
  it("serves resourceVersion=0 from the watch cache", async () => {
    await eventually(async () => {
      const r = await h.get(`${P}?resourceVersion=0`);
      return names(r.body).length === 5;
    });
    const r = await h.get(`${P}?resourceVersion=0&labelSelector=app%3Dweb`);
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe("ConfigMapList");
    expect(r.body.apiVersion).toBe("v1");
    expect(names(r.body)).toEqual(["a1", "a2"]);
    expect(Number(r.body.metadata.resourceVersion)).toBeGreaterThan(0);
  });

  it("reads exactly at N with Exact, and refuses a future N with 504", async () => {
    const before = await h.get(P);
    const rv = before.body.metadata.resourceVersion;
    await h.post(P, configMap("later"));
    const exact = await h.get(`${P}?resourceVersion=${rv}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(200);
    expect(names(exact.body)).not.toContain("later");
    expect(exact.body.metadata.resourceVersion).toBe(rv);
    const withLimit = await h.get(`${P}?resourceVersion=${rv}&limit=100`);
    expect(names(withLimit.body)).not.toContain("later");
    const notOlder = await h.get(`${P}?resourceVersion=${rv}&resourceVersionMatch=NotOlderThan`);
    expect(names(notOlder.body)).toContain("later");
    const future = await h.get(`${P}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan`);
    expect(future.status).toBe(504);
    expect(future.body.message).toMatch(/^Too large resource version: 999999999, current: \d+$/);
    expect(future.body.details.causes[0].reason).toBe("ResourceVersionTooLarge");
    await h.del(`${P}/later`);
  });

  it("validates resourceVersionMatch as Kubernetes does", async () => {
    const noRv = await h.get(`${P}?resourceVersionMatch=Exact`);
    expect(noRv.status).toBe(422);
    expect(noRv.body.message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided',
    );
    const zero = await h.get(`${P}?resourceVersion=0&resourceVersionMatch=Exact`);
    expect(zero.status).toBe(422);
    const bad = await h.get(`${P}?resourceVersion=1&resourceVersionMatch=Sometime`);
    expect(bad.status).toBe(422);
    const cont = await h.get(`${P}?resourceVersion=5&continue=abc`);
    expect(cont.status).toBe(400);
  });

  it("answers 410 for compacted revisions, and a fresh continue token for expired ones", async () => {
    await h.namespace("cmp");
    const C = "/api/v1/namespaces/cmp/configmaps";
    for (const n of ["c1", "c2", "c3", "c4"]) await h.post(C, configMap(n));
    const first = await h.get(`${C}?limit=2`);
    const rv = Number(first.body.metadata.resourceVersion);
    await h.post(C, configMap("c5"));
    await h.store.compact(await h.store.currentRevision());

    const exact = await h.get(`${C}?resourceVersion=${rv}&resourceVersionMatch=Exact`);
    expect(exact.status).toBe(410);
    expect(exact.body.reason).toBe("Expired");
    expect(exact.body.message).toBe("The resourceVersion for the provided list is too old.");

    const expired = await h.get(`${C}?limit=2&continue=${first.body.metadata.continue}`);
    expect(expired.status).toBe(410);
    expect(expired.body.reason).toBe("Expired");
    expect(expired.body.message).toContain("The provided continue parameter is too old");
    const fresh = expired.body.metadata.continue;
    expect(fresh).toBeTruthy();
    const rest = await h.get(`${C}?limit=2&continue=${fresh}`);
    expect(rest.status).toBe(200);
    expect(names(rest.body)).toEqual(["c3", "c4"]);
    const last = await h.get(`${C}?limit=2&continue=${rest.body.metadata.continue}`);
    expect(names(last.body)).toEqual(["c5"]);
    expect(last.body.metadata.continue).toBeUndefined();
  });
});

describe("representations", () => {
  it("lists as a Table and as PartialObjectMetadataList", async () => {
    const t = await h.get(P, { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" });
    expect(t.status).toBe(200);
    expect(t.headers["content-type"]).toBe("application/json;as=Table;g=meta.k8s.io;v=v1");
    expect(t.body.kind).toBe("Table");
    expect(t.body.columnDefinitions.map((c: { name: string }) => c.name)).toContain("Name");
    expect(t.body.rows.length).toBe(5);
    expect(t.body.rows[0].object.kind).toBe("PartialObjectMetadata");
    expect(t.body.metadata.resourceVersion).toBeTruthy();
    const p = await h.get(P, {
      accept: "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    });
    expect(p.body.kind).toBe("PartialObjectMetadataList");
    expect(p.body.items[0].kind).toBe("PartialObjectMetadata");
    expect(p.body.items[0].metadata.name).toBe("a1");
    const cached = await h.get(`${P}?resourceVersion=0`, {
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    });
    expect(cached.body.kind).toBe("Table");
  });
});
