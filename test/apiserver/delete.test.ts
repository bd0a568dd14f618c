import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addWidgetType, configMap, type Harness, startHarness, widget } from "./harness.ts";

let h: Harness;
const CM = "/api/v1/namespaces/ns1/configmaps";
const WD = "/apis/example.com/v1/namespaces/ns1/widgets";

beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("ns1");
});
afterAll(async () => {
  await h.close();
});

describe("delete", () => {
  it("deletes a ConfigMap and answers with a success Status", async () => {
    const c = await h.post(CM, configMap("d1"));
    const r = await h.del(`${CM}/d1`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      kind: "Status",
      apiVersion: "v1",
      status: "Success",
      details: { name: "d1", kind: "configmaps", uid: c.body.metadata.uid },
    });
    expect((await h.get(`${CM}/d1`)).status).toBe(404);
    const again = await h.del(`${CM}/d1`);
    expect(again.status).toBe(404);
    expect(again.body.message).toBe('configmaps "d1" not found');
  });

  it("answers a custom resource's deletion with the object", async () => {
    await h.post(WD, widget("wd1", { replicas: 1 }));
    const r = await h.del(`${WD}/wd1`);
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe("Widget");
    expect(r.body.metadata.name).toBe("wd1");
  });

  it("checks uid and resourceVersion preconditions", async () => {
    const c = await h.post(CM, configMap("pre"));
    const uid = await h.del(`${CM}/pre`, {
      kind: "DeleteOptions",
      apiVersion: "v1",
      preconditions: { uid: "not-it" },
    });
    expect(uid.status).toBe(409);
    expect(uid.body.message).toBe(
      `Operation cannot be fulfilled on configmaps "pre": Precondition failed: UID in precondition: not-it, UID in object meta: ${c.body.metadata.uid}`,
    );
    const rv = await h.del(`${CM}/pre`, { preconditions: { resourceVersion: "1" } });
    expect(rv.status).toBe(409);
    expect(rv.body.message).toContain("Precondition failed: ResourceVersion in precondition: 1");
    const ok = await h.del(`${CM}/pre`, {
      preconditions: { uid: c.body.metadata.uid, resourceVersion: c.body.metadata.resourceVersion },
    });
    expect(ok.status).toBe(200);
  });

  it("marks an object with finalizers and removes it when they are emptied", async () => {
    await h.post(CM, configMap("fin", {}, { finalizers: ["example.com/hold"] }));
    const d = await h.del(`${CM}/fin`);
    expect(d.status).toBe(200);
    expect(d.body.kind).toBe("ConfigMap");
    expect(d.body.metadata.deletionTimestamp).toBeTruthy();
    expect(d.body.metadata.deletionGracePeriodSeconds).toBe(0);
    expect(d.body.metadata.finalizers).toEqual(["example.com/hold"]);

    const add = await h.put(`${CM}/fin`, {
      ...d.body,
      metadata: { ...d.body.metadata, finalizers: ["example.com/hold", "example.com/more"] },
    });
    expect(add.status).toBe(422);
    expect(add.body.message).toContain(
      "no new finalizers can be added if the object is being deleted",
    );

    const again = await h.del(`${CM}/fin`);
    expect(again.status).toBe(200);
    expect(again.body.metadata.deletionTimestamp).toBe(d.body.metadata.deletionTimestamp);

    const cur = (await h.get(`${CM}/fin`)).body;
    const done = await h.put(`${CM}/fin`, {
      ...cur,
      metadata: { ...cur.metadata, finalizers: [] },
    });
    expect(done.status).toBe(200);
    expect((await h.get(`${CM}/fin`)).status).toBe(404);
  });

  it("records propagation policies as finalizers", async () => {
    await h.post(CM, configMap("orph"));
    const o = await h.del(`${CM}/orph`, { propagationPolicy: "Orphan" });
    expect(o.status).toBe(200);
    expect(o.body.metadata.finalizers).toEqual(["orphan"]);
    expect(o.body.metadata.deletionTimestamp).toBeTruthy();

    await h.post(CM, configMap("fg"));
    const f = await h.del(`${CM}/fg?propagationPolicy=Foreground`);
    expect(f.status).toBe(200);
    expect(f.body.metadata.finalizers).toEqual(["foregroundDeletion"]);

    // Background on an object that only carried "orphan": the finalizer goes, and so does the object.
    const bg = await h.del(`${CM}/orph`, { propagationPolicy: "Background" });
    expect(bg.status).toBe(200);
    expect((await h.get(`${CM}/orph`)).status).toBe(404);

    const bad = await h.del(`${CM}/fg`, { propagationPolicy: "Sideways" });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain('propagationPolicy: Unsupported value: "Sideways"');
    const both = await h.del(`${CM}/fg`, { propagationPolicy: "Orphan", orphanDependents: true });
    expect(both.status).toBe(422);
  });

  it("deletes a collection by selector", async () => {
    await h.namespace("coll");
    const P = "/api/v1/namespaces/coll/configmaps";
    for (const [n, team] of [
      ["c1", "a"],
      ["c2", "a"],
      ["c3", "b"],
    ]) {
      await h.post(P, configMap(n, {}, { labels: { team } }));
    }
    const r = await h.del(`${P}?labelSelector=team%3Da`);
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe("ConfigMapList");
    expect(r.body.items.map((i: { metadata: { name: string } }) => i.metadata.name).sort()).toEqual(
      ["c1", "c2"],
    );
    const left = await h.get(P);
    expect(left.body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual([
      "c3",
    ]);
    const all = await h.del("/api/v1/configmaps");
    expect(all.status).toBe(405);
  });

  it("does not serve deletecollection where the type does not", async () => {
    const r = await h.del("/api/v1/namespaces");
    expect(r.status).toBe(405);
  });
});
