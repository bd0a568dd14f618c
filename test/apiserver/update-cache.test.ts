/**
 * Updates start from the stored object even when this server keeps a decoded copy
 * of it: a write made by another server (straight into storage) is seen, and an
 * update that changes nothing writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configMap, type Harness, startHarness } from "./harness.ts";

const CMS = "/api/v1/namespaces/default/configmaps";
const MERGE = "application/merge-patch+json";

describe("updates and the decoded objects kept", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await h.namespace("default");
  });

  afterAll(async () => {
    await h?.close();
  });

  it("sees a write made by another server in between", async () => {
    expect((await h.post(CMS, configMap("shared", { a: "1" }))).status).toBe(201);
    // Kept after this server's own update.
    expect((await h.patch(`${CMS}/shared`, { data: { b: "2" } }, MERGE)).status).toBe(200);
    // Another server writes straight into storage.
    const key = "/registry/core/configmaps/default/shared";
    const kv = await h.store.get(key);
    const raw = JSON.parse(kv!.value);
    raw.data.c = "3";
    await h.store.update(key, JSON.stringify(raw), kv!.modRevision);
    const patched = await h.patch(`${CMS}/shared`, { data: { d: "4" } }, MERGE);
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual({ a: "1", b: "2", c: "3", d: "4" });
    const got = await h.get(`${CMS}/shared`);
    expect(got.body.data).toEqual({ a: "1", b: "2", c: "3", d: "4" });
  });

  it("writes nothing for an update that changes nothing, several times over", async () => {
    const created = await h.post(CMS, configMap("same", { a: "1" }));
    const revision = await h.store.currentRevision();
    for (let i = 0; i < 3; i++) {
      const put = await h.put(`${CMS}/same`, created.body);
      expect(put.status).toBe(200);
      expect(put.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
    }
    expect(await h.store.currentRevision()).toBe(revision);
    // And a real change after the no-ops is stored.
    const changed = await h.patch(`${CMS}/same`, { data: { a: "2" } }, MERGE);
    expect(changed.body.data).toEqual({ a: "2" });
    expect(Number(changed.body.metadata.resourceVersion)).toBeGreaterThan(revision);
  });
});
