import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addWidgetType, configMap, type Harness, startHarness, widget } from "./harness.ts";

let h: Harness;
const CM = "/api/v1/namespaces/ns1/configmaps";
const WD = "/apis/example.com/v1/namespaces/ns1/widgets";
const MERGE = "application/merge-patch+json";
const JSONP = "application/json-patch+json";
const SMP = "application/strategic-merge-patch+json";
const APPLY = "application/apply-patch+yaml";

beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("ns1");
});
afterAll(async () => {
  await h.close();
});

describe("patch", () => {
  it("applies a JSON merge patch", async () => {
    await h.post(CM, configMap("m", { a: "1", b: "2" }));
    const r = await h.patch(`${CM}/m`, { data: { a: null, c: "3" } }, MERGE);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ b: "2", c: "3" });
    expect(r.body.metadata.generation).toBeUndefined();
  });

  it("applies a JSON patch, with test", async () => {
    await h.post(CM, configMap("j", { a: "1" }));
    const ok = await h.patch(
      `${CM}/j`,
      [
        { op: "test", path: "/data/a", value: "1" },
        { op: "add", path: "/data/b", value: "2" },
      ],
      JSONP,
    );
    expect(ok.status).toBe(200);
    expect(ok.body.data).toEqual({ a: "1", b: "2" });
    const failed = await h.patch(`${CM}/j`, [{ op: "test", path: "/data/a", value: "9" }], JSONP);
    expect(failed.status).toBe(422);
    expect(failed.body.kind).toBe("Status");
    expect((await h.get(`${CM}/j`)).body.data).toEqual({ a: "1", b: "2" });
    const notList = await h.patch(`${CM}/j`, { op: "add" }, JSONP);
    expect(notList.status).toBe(400);
  });

  it("applies a strategic merge patch to built-in types and refuses it for custom ones", async () => {
    await h.post(CM, configMap("s", { a: "1" }));
    const r = await h.patch(`${CM}/s`, { metadata: { labels: { l: "v" } }, data: { b: "2" } }, SMP);
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ a: "1", b: "2" });
    expect(r.body.metadata.labels).toEqual({ l: "v" });
    await h.post(WD, widget("sw", { replicas: 1 }));
    const custom = await h.patch(`${WD}/sw`, { spec: { replicas: 2 } }, SMP);
    expect(custom.status).toBe(415);
    expect(custom.body.reason).toBe("UnsupportedMediaType");
    expect(custom.body.message).toBe(
      "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );
  });

  it("refuses unknown patch types with 415", async () => {
    await h.post(CM, configMap("u"));
    const r = await h.patch(`${CM}/u`, { data: {} }, "application/json");
    expect(r.status).toBe(415);
  });

  it("honours a resourceVersion in the patch as a precondition", async () => {
    const c = await h.post(CM, configMap("p", { a: "1" }));
    await h.patch(`${CM}/p`, { data: { a: "2" } }, MERGE);
    const stale = await h.patch(
      `${CM}/p`,
      { metadata: { resourceVersion: c.body.metadata.resourceVersion }, data: { a: "3" } },
      MERGE,
    );
    expect(stale.status).toBe(409);
    expect((await h.get(`${CM}/p`)).body.data).toEqual({ a: "2" });
  });

  it("patches status only through /status", async () => {
    await h.post(WD, widget("ps", { replicas: 1 }));
    const main = await h.patch(`${WD}/ps`, { status: { ready: true } }, MERGE);
    expect(main.status).toBe(200);
    expect(main.body.status).toBeUndefined();
    const st = await h.patch(
      `${WD}/ps/status`,
      { status: { ready: true }, spec: { replicas: 9 } },
      MERGE,
    );
    expect(st.status).toBe(200);
    expect(st.body.status).toEqual({ ready: true });
    expect(st.body.spec.replicas).toBe(1);
    expect(st.body.metadata.generation).toBe(1);
  });

  it("answers 404 when patching a missing object", async () => {
    const r = await h.patch(`${CM}/none`, { data: { a: "1" } }, MERGE);
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('configmaps "none" not found');
  });

  it("refuses a patch that renames the object or changes its kind", async () => {
    await h.post(CM, configMap("ren"));
    const r = await h.patch(`${CM}/ren`, { metadata: { name: "other" } }, MERGE);
    expect(r.status).toBe(400);
    const k = await h.patch(`${CM}/ren`, { kind: "Secret" }, MERGE);
    expect(k.status).toBe(400);
  });

  it("warns about unknown fields a patch adds, and refuses them under Strict", async () => {
    await h.post(CM, configMap("pu"));
    const warn = await h.patch(`${CM}/pu`, { bogus: 1 }, MERGE);
    expect(warn.status).toBe(200);
    expect(warn.headers.warning).toBe('299 - "unknown field \\"bogus\\""');
    const strict = await h.request("PATCH", `${CM}/pu?fieldValidation=Strict`, {
      raw: JSON.stringify({ bogus: 1 }),
      headers: { "content-type": MERGE },
    });
    expect(strict.status).toBe(400);
  });
});

describe("server-side apply", () => {
  it("requires fieldManager (422 on PatchOptions), creates with 201, then merges with 200", async () => {
    const body = JSON.stringify(configMap("ssa", { a: "1" }));
    const missing = await h.request("PATCH", `${CM}/ssa`, {
      raw: body,
      headers: { "content-type": APPLY },
    });
    expect(missing.status).toBe(422);
    expect(missing.body.message).toBe(
      'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    );
    const created = await h.request("PATCH", `${CM}/ssa?fieldManager=alice`, {
      raw: body,
      headers: { "content-type": APPLY },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ a: "1" });
    expect(created.body.metadata.managedFields[0]).toMatchObject({
      manager: "alice",
      operation: "Apply",
    });
    const again = await h.request("PATCH", `${CM}/ssa?fieldManager=alice`, {
      raw: body,
      headers: { "content-type": APPLY },
    });
    expect(again.status).toBe(200);
    expect(again.body.metadata.resourceVersion).toBe(created.body.metadata.resourceVersion);
    const yaml =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: '1'\n  b: '2'\n";
    const merged = await h.request("PATCH", `${CM}/ssa?fieldManager=alice`, {
      raw: yaml,
      headers: { "content-type": APPLY },
    });
    expect(merged.status).toBe(200);
    expect(merged.body.data).toEqual({ a: "1", b: "2" });
  });

  it("reports conflicts with another manager and takes over with force", async () => {
    const apply = (manager: string, data: Record<string, string>, force = false) =>
      h.request("PATCH", `${CM}/own?fieldManager=${manager}${force ? "&force=true" : ""}`, {
        raw: JSON.stringify(configMap("own", data)),
        headers: { "content-type": APPLY },
      });
    expect((await apply("one", { a: "1" })).status).toBe(201);
    const conflict = await apply("two", { a: "2" });
    expect(conflict.status).toBe(409);
    expect(conflict.body.details.causes[0].reason).toBe("FieldManagerConflict");
    const forced = await apply("two", { a: "2" }, true);
    expect(forced.status).toBe(200);
    expect(forced.body.data).toEqual({ a: "2" });
  });

  it("records managedFields on ordinary writes", async () => {
    const c = await h.request("POST", `${CM}?fieldManager=bob`, {
      body: configMap("mf", { a: "1" }),
    });
    expect(c.status).toBe(201);
    expect(c.body.metadata.managedFields[0]).toMatchObject({ manager: "bob", operation: "Update" });
    const ua = await h.request("POST", CM, {
      body: configMap("mf2", { a: "1" }),
      headers: { "user-agent": "kubectl/v1.32.0 (linux/amd64) kubernetes/abc" },
    });
    expect(ua.body.metadata.managedFields[0].manager).toBe("kubectl");
  });
});
