/**
 * Updates start from the stored object even when this server keeps a decoded copy
 * of it: a write made by another server (straight into storage) is seen, and an
 * update that changes nothing writes nothing. A kept copy that another server's
 * write made stale neither refuses, nor answers as unchanged, nor deletes what the
 * current object decides otherwise.
 */
import type { KubeObject } from "@setpoint/api";
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

  /** Another server's write straight into storage: `change` applied to the stored object. */
  async function writeElsewhere(name: string, change: (obj: KubeObject) => void): Promise<string> {
    const key = `/registry/core/configmaps/default/${name}`;
    const kv = await h.store.get(key);
    const raw = JSON.parse(kv!.value) as KubeObject;
    change(raw);
    return String(await h.store.update(key, JSON.stringify(raw), kv!.modRevision));
  }

  /** Created, then updated through this server (so that a copy is kept). */
  async function keptObject(name: string): Promise<KubeObject> {
    expect((await h.post(CMS, configMap(name, { a: "1" }))).status).toBe(201);
    const patched = await h.patch(`${CMS}/${name}`, { data: { b: "2" } }, MERGE);
    expect(patched.status).toBe(200);
    return patched.body as KubeObject;
  }

  it("judges a resourceVersion precondition by the stored object, not a stale copy", async () => {
    const kept = await keptObject("precond");
    const rv = await writeElsewhere("precond", (o) => {
      (o.data as Record<string, string>).c = "3";
    });
    // The current resourceVersion, which the kept copy does not have: accepted.
    const put = await h.put(`${CMS}/precond`, {
      ...kept,
      metadata: { ...kept.metadata, resourceVersion: rv },
      data: { x: "2" },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({ x: "2" });
    // The kept copy's resourceVersion, once another write made it stale: 409.
    await writeElsewhere("precond", (o) => {
      (o.data as Record<string, string>).c = "3";
    });
    const stale = await h.put(`${CMS}/precond`, { ...put.body, data: { x: "1" } });
    expect(stale.status).toBe(409);
  });

  it("writes a change that would be none on a stale copy", async () => {
    await keptObject("undone");
    await writeElsewhere("undone", (o) => {
      (o.data as Record<string, string>).b = "other";
    });
    const patched = await h.patch(`${CMS}/undone`, { data: { b: "2" } }, MERGE);
    expect(patched.status).toBe(200);
    expect(patched.body.data).toEqual({ a: "1", b: "2" });
    expect((await h.get(`${CMS}/undone`)).body.data).toEqual({ a: "1", b: "2" });
  });

  it("answers 404 for an object another server deleted, and deletes one another server changed", async () => {
    await keptObject("gone");
    await h.store.delete("/registry/core/configmaps/default/gone");
    expect((await h.patch(`${CMS}/gone`, { data: { c: "3" } }, MERGE)).status).toBe(404);
    await keptObject("gone2");
    await writeElsewhere("gone2", (o) => {
      (o.data as Record<string, string>).c = "3";
    });
    const deleted = await h.del(`${CMS}/gone2`);
    expect(deleted.status).toBe(200);
    expect((await h.get(`${CMS}/gone2`)).status).toBe(404);
  });
});
