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

describe("update", () => {
  it("moves generation only on changes outside metadata and status", async () => {
    const c = await h.post(WD, widget("gen", { replicas: 1 }));
    expect(c.body.metadata.generation).toBe(1);
    const labelled = await h.put(`${WD}/gen`, {
      ...c.body,
      metadata: { ...c.body.metadata, labels: { x: "y" } },
    });
    expect(labelled.status).toBe(200);
    expect(labelled.body.metadata.generation).toBe(1);
    expect(Number(labelled.body.metadata.resourceVersion)).toBeGreaterThan(
      Number(c.body.metadata.resourceVersion),
    );
    const changed = await h.put(`${WD}/gen`, { ...labelled.body, spec: { replicas: 2 } });
    expect(changed.body.metadata.generation).toBe(2);
    expect(changed.body.metadata.uid).toBe(c.body.metadata.uid);
    expect(changed.body.metadata.creationTimestamp).toBe(c.body.metadata.creationTimestamp);
  });

  it("sets no generation on the types Kubernetes sets none on", async () => {
    const paths: [string, Record<string, unknown>][] = [
      [CM, configMap("nogen", { a: "1" })],
      [
        "/api/v1/namespaces/ns1/secrets",
        { apiVersion: "v1", kind: "Secret", metadata: { name: "nogen" } },
      ],
      [
        "/api/v1/namespaces/ns1/serviceaccounts",
        { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "nogen" } },
      ],
      [
        "/apis/coordination.k8s.io/v1/namespaces/ns1/leases",
        {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name: "nogen" },
          spec: {},
        },
      ],
      ["/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "nogen" } }],
    ];
    for (const [path, body] of paths) {
      const created = await h.post(path, body);
      expect(created.status, path).toBe(201);
      expect(created.body.metadata.generation, path).toBeUndefined();
      // A client that sends one does not get it stored either.
      const named = (body.metadata as { name: string }).name;
      const sent = await h.put(`${path}/${named}`, {
        ...created.body,
        metadata: { ...created.body.metadata, generation: 7 },
      });
      expect(sent.status, path).toBe(200);
      expect(sent.body.metadata.generation, path).toBeUndefined();
    }
  });

  it("refuses a stale resourceVersion with Kubernetes' conflict", async () => {
    const c = await h.post(CM, configMap("stale", { a: "1" }));
    const first = await h.put(`${CM}/stale`, { ...c.body, data: { a: "2" } });
    expect(first.status).toBe(200);
    const second = await h.put(`${CM}/stale`, { ...c.body, data: { a: "3" } });
    expect(second.status).toBe(409);
    expect(second.body.reason).toBe("Conflict");
    expect(second.body.message).toBe(
      'Operation cannot be fulfilled on configmaps "stale": the object has been modified; please apply your changes to the latest version and try again',
    );
    expect(second.body.details).toMatchObject({ name: "stale", kind: "configmaps" });
    const now = await h.get(`${CM}/stale`);
    expect(now.body.data).toEqual({ a: "2" });
  });

  it("updates without resourceVersion unconditionally where the type allows it", async () => {
    await h.post(CM, configMap("uncond", { a: "1" }));
    const r = await h.put(`${CM}/uncond`, configMap("uncond", { a: "9" }));
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ a: "9" });
    await h.post(WD, widget("w-uncond", { replicas: 1 }));
    const w = await h.put(`${WD}/w-uncond`, widget("w-uncond", { replicas: 2 }));
    expect(w.status).toBe(422);
    expect(w.body.message).toContain("metadata.resourceVersion");
    expect(w.body.message).toContain("must be specified for an update");
  });

  it("does not write when nothing changed", async () => {
    const c = await h.post(CM, configMap("same", { a: "1" }));
    const r = await h.put(`${CM}/same`, c.body);
    expect(r.status).toBe(200);
    expect(r.body.metadata.resourceVersion).toBe(c.body.metadata.resourceVersion);
  });

  it("answers 404 for a PUT to a missing object of a type without create-on-update", async () => {
    const r = await h.put(`${CM}/ghost`, configMap("ghost"));
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('configmaps "ghost" not found');
  });

  it("creates on PUT for types that allow it", async () => {
    const lease = h.registry.get("coordination.k8s.io", "leases")!;
    const before = lease.strategy.allowCreateOnUpdate;
    lease.strategy.allowCreateOnUpdate = true;
    try {
      const r = await h.put("/apis/coordination.k8s.io/v1/namespaces/ns1/leases/l1", {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "l1" },
        spec: { holderIdentity: "me" },
      });
      expect(r.status).toBe(201);
      expect(r.body.metadata.uid).toBeTruthy();
      expect(r.body.metadata.generation).toBeUndefined();
    } finally {
      lease.strategy.allowCreateOnUpdate = before;
    }
  });

  it("refuses a body whose name or namespace differs from the URL", async () => {
    await h.post(CM, configMap("named"));
    const r = await h.put(`${CM}/named`, configMap("other"));
    expect(r.status).toBe(400);
    expect(r.body.message).toBe(
      "the name of the object (other) does not match the name on the URL (named)",
    );
    const ns = await h.post(CM, configMap("x", {}, { namespace: "elsewhere" }));
    expect(ns.status).toBe(400);
    expect(ns.body.message).toBe(
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  });

  it("keeps uid, creationTimestamp and deletion fields out of a client's reach", async () => {
    const c = await h.post(
      CM,
      configMap("immut", {}, { uid: "mine", creationTimestamp: "2001-01-01T00:00:00Z" }),
    );
    expect(c.body.metadata.uid).not.toBe("mine");
    expect(c.body.metadata.creationTimestamp).not.toBe("2001-01-01T00:00:00Z");
    const r = await h.put(`${CM}/immut`, {
      ...c.body,
      metadata: { ...c.body.metadata, uid: "changed" },
    });
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0].field).toBe("metadata.uid");
  });
});

describe("status subresource", () => {
  it("ignores .status on the main resource and everything but .status on /status", async () => {
    const c = await h.post(WD, {
      ...widget("st", { replicas: 1 }),
      status: { ready: true },
    });
    expect(c.status).toBe(201);
    expect(c.body.status).toBeUndefined();
    expect(c.body.spec.color).toBe("blue");

    const s = await h.put(`${WD}/st/status`, {
      ...c.body,
      metadata: { ...c.body.metadata, labels: { sneaky: "yes" } },
      spec: { replicas: 50 },
      status: { ready: true, observedGeneration: 1 },
    });
    expect(s.status).toBe(200);
    expect(s.body.status).toEqual({ ready: true, observedGeneration: 1 });
    expect(s.body.spec.replicas).toBe(1);
    expect(s.body.metadata.labels).toBeUndefined();
    expect(s.body.metadata.generation).toBe(1);

    const m = await h.put(`${WD}/st`, {
      ...s.body,
      spec: { ...s.body.spec, replicas: 2 },
      status: { ready: false },
    });
    expect(m.status).toBe(200);
    expect(m.body.status).toEqual({ ready: true, observedGeneration: 1 });
    expect(m.body.spec.replicas).toBe(2);
    expect(m.body.metadata.generation).toBe(2);

    const got = await h.get(`${WD}/st/status`);
    expect(got.status).toBe(200);
    expect(got.body.status.ready).toBe(true);
  });

  it("returns 404 for a subresource the type does not have", async () => {
    await h.post(CM, configMap("nostatus"));
    const r = await h.get(`${CM}/nostatus/status`);
    expect(r.status).toBe(404);
  });

  it("validates custom rules with 422 and field causes", async () => {
    const r = await h.post(WD, widget("neg", { replicas: -1 }));
    expect(r.status).toBe(422);
    expect(r.body.reason).toBe("Invalid");
    expect(r.body.message).toBe(
      'Widget.example.com "neg" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    );
    expect(r.body.details).toMatchObject({ name: "neg", group: "example.com", kind: "Widget" });
    expect(r.body.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        field: "spec.replicas",
        message: "Invalid value: -1: must be greater than or equal to 0",
      },
    ]);
  });
});

describe("dryRun=All", () => {
  it("answers as if written but stores nothing", async () => {
    const c = await h.post(`${CM}?dryRun=All`, configMap("dry", { a: "1" }));
    expect(c.status).toBe(201);
    expect(c.body.metadata.uid).toBeTruthy();
    expect((await h.get(`${CM}/dry`)).status).toBe(404);

    const real = await h.post(CM, configMap("dry2", { a: "1" }));
    const u = await h.put(`${CM}/dry2?dryRun=All`, { ...real.body, data: { a: "2" } });
    expect(u.status).toBe(200);
    expect(u.body.data).toEqual({ a: "2" });
    expect((await h.get(`${CM}/dry2`)).body.data).toEqual({ a: "1" });

    const d = await h.del(`${CM}/dry2?dryRun=All`);
    expect(d.status).toBe(200);
    expect((await h.get(`${CM}/dry2`)).status).toBe(200);

    const bad = await h.post(`${CM}?dryRun=Some`, configMap("dry3"));
    expect(bad.status).toBe(422);
  });
});

describe("namespaces", () => {
  it("marks a deleted namespace Terminating, refuses new content, and removes it once finalized", async () => {
    await h.namespace("doomed");
    await h.post("/api/v1/namespaces/doomed/configmaps", configMap("inside"));
    const d = await h.del("/api/v1/namespaces/doomed");
    expect(d.status).toBe(200);
    expect(d.body.kind).toBe("Namespace");
    expect(d.body.metadata.deletionTimestamp).toBeTruthy();
    expect(d.body.status.phase).toBe("Terminating");
    expect(d.body.spec.finalizers).toEqual(["kubernetes"]);

    const create = await h.post("/api/v1/namespaces/doomed/configmaps", configMap("late"));
    expect(create.status).toBe(403);
    expect(create.body.reason).toBe("Forbidden");
    expect(create.body.message).toBe(
      'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    expect(create.body.details.causes).toEqual([
      {
        reason: "NamespaceTerminating",
        message: "namespace doomed is being terminated",
        field: "metadata.namespace",
      },
    ]);
    // Updates of existing content are still allowed.
    const upd = await h.put(
      "/api/v1/namespaces/doomed/configmaps/inside",
      configMap("inside", { a: "1" }),
    );
    expect(upd.status).toBe(200);

    // A main-resource PUT cannot change spec.finalizers...
    const ns = (await h.get("/api/v1/namespaces/doomed")).body;
    const main = await h.put("/api/v1/namespaces/doomed", { ...ns, spec: { finalizers: [] } });
    expect(main.status).toBe(200);
    expect(main.body.spec.finalizers).toEqual(["kubernetes"]);
    // ... /finalize can, and then the namespace goes.
    const fin = await h.put("/api/v1/namespaces/doomed/finalize", {
      ...main.body,
      spec: { finalizers: [] },
    });
    expect(fin.status).toBe(200);
    expect((await h.get("/api/v1/namespaces/doomed")).status).toBe(404);
  });

  it("refuses to delete system namespaces", async () => {
    await h.namespace("default");
    const r = await h.del("/api/v1/namespaces/default");
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(
      'namespaces "default" is forbidden: this namespace may not be deleted',
    );
  });

  it("validates namespace names as DNS labels", async () => {
    const r = await h.post("/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "a.b" },
    });
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0].field).toBe("metadata.name");
  });
});
