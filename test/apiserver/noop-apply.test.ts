/**
 * Repeated applies that change nothing are answered from what the server
 * remembered, and only while that answer is still the one a full apply would
 * give: another writer, a schema change or a different request all get a real
 * apply.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { crdToDefinition } from "../../src/registry/crd/index.ts";
import { configMap, type Harness, startHarness } from "./harness.ts";

const APPLY = "application/apply-patch+yaml";
const CMS = "/api/v1/namespaces/default/configmaps";

function gadgetCrd(defaults: Record<string, unknown>) {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "gadgets.example.com", uid: "u", generation: 1 },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "gadgets", kind: "Gadget" },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              properties: {
                spec: {
                  type: "object",
                  properties: { size: { type: "integer" }, color: { type: "string", ...defaults } },
                },
              },
            },
          },
        },
      ],
    },
  };
}

describe("repeated no-op applies", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
    await h.namespace("default");
  });

  afterAll(async () => {
    await h?.close();
  });

  const apply = (path: string, body: unknown, query = "fieldManager=a") =>
    h.request("PATCH", `${path}?${query}`, {
      raw: JSON.stringify(body),
      headers: { "content-type": APPLY },
    });

  it("answers a repeat with what the full apply answered, and writes nothing", async () => {
    const cfg = configMap("same", { k: "1" });
    const first = await apply(`${CMS}/same`, cfg);
    expect(first.status).toBe(201);
    const second = await apply(`${CMS}/same`, cfg);
    expect(second.status).toBe(200);
    const revision = await h.store.currentRevision();
    const third = await apply(`${CMS}/same`, cfg);
    expect(third.status).toBe(200);
    expect(third.text).toBe(second.text);
    expect(third.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
    expect(await h.store.currentRevision()).toBe(revision);
  });

  it("applies for real once another manager changed the object", async () => {
    const cfg = configMap("shared", { k: "1" });
    expect((await apply(`${CMS}/shared`, cfg)).status).toBe(201);
    expect((await apply(`${CMS}/shared`, cfg)).status).toBe(200);
    // b takes the field by force: a's next identical apply now conflicts.
    const forced = await apply(
      `${CMS}/shared`,
      configMap("shared", { k: "2" }),
      "fieldManager=b&force=true",
    );
    expect(forced.status).toBe(200);
    const again = await apply(`${CMS}/shared`, cfg);
    expect(again.status).toBe(409);
    expect(again.body.details.causes[0].message).toContain('conflict with "b"');
    // A write by hand that leaves the field as it was still means a real apply.
    const got = (await h.get(`${CMS}/shared`)).body;
    got.metadata.labels = { touched: "yes" };
    expect((await h.put(`${CMS}/shared`, got)).status).toBe(200);
    const after = await apply(`${CMS}/shared`, configMap("shared", { k: "2" }), "fieldManager=b");
    expect(after.status).toBe(200);
    expect(after.body.metadata.labels).toEqual({ touched: "yes" });
  });

  it("keeps the warnings of the apply it repeats", async () => {
    const cfg = { ...configMap("warned", { k: "1" }), bogus: true };
    expect((await apply(`${CMS}/warned`, cfg)).status).toBe(201);
    const second = await apply(`${CMS}/warned`, cfg);
    const third = await apply(`${CMS}/warned`, cfg);
    expect(second.headers.warning).toContain('unknown field \\"bogus\\"');
    expect(third.headers.warning).toBe(second.headers.warning);
  });

  it("applies for real when the type's definition changed", async () => {
    h.registry.add(crdToDefinition(gadgetCrd({})));
    const path = "/apis/example.com/v1/namespaces/default/gadgets";
    const cfg = {
      apiVersion: "example.com/v1",
      kind: "Gadget",
      metadata: { name: "g" },
      spec: { size: 1 },
    };
    expect((await apply(`${path}/g`, cfg)).status).toBe(201);
    expect((await apply(`${path}/g`, cfg)).body.spec).toEqual({ size: 1 });
    expect((await apply(`${path}/g`, cfg)).body.spec).toEqual({ size: 1 });
    // A default added later shows in the answer to the very same apply.
    h.registry.add(crdToDefinition(gadgetCrd({ default: "blue" })));
    const defaulted = await apply(`${path}/g`, cfg);
    expect(defaulted.status).toBe(200);
    expect(defaulted.body.spec).toEqual({ size: 1, color: "blue" });
  });
});
