/**
 * Objects come back as Kubernetes' Go types encode them (over real HTTP): canonical
 * Time and MicroTime values, malformed ones refused, and empty lists and maps that
 * the types omit left out.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalTimestamp } from "../../src/apiserver/wire/canonical.ts";
import { addWidgetType, configMap, type Harness, startHarness, widget } from "./harness.ts";

let h: Harness;
const CM = "/api/v1/namespaces/ns1/configmaps";
const LEASES = "/apis/coordination.k8s.io/v1/namespaces/ns1/leases";
const WD = "/apis/example.com/v1/namespaces/ns1/widgets";

beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("ns1");
});
afterAll(async () => {
  await h.close();
});

const lease = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "coordination.k8s.io/v1",
  kind: "Lease",
  metadata: { name },
  spec,
});

describe("timestamps", () => {
  it("stores MicroTimes with six digits in UTC, whatever offset and precision were sent", async () => {
    const r = await h.post(
      LEASES,
      lease("l1", {
        holderIdentity: "me",
        acquireTime: "2024-01-02T15:04:05.123456+00:00",
        renewTime: "2024-01-02T17:04:05.1+02:00",
      }),
    );
    expect(r.status).toBe(201);
    expect(r.body.spec.acquireTime).toBe("2024-01-02T15:04:05.123456Z");
    expect(r.body.spec.renewTime).toBe("2024-01-02T15:04:05.100000Z");
    const got = await h.get(`${LEASES}/l1`);
    expect(got.body.spec.acquireTime).toBe("2024-01-02T15:04:05.123456Z");
    const updated = await h.put(`${LEASES}/l1`, {
      ...got.body,
      spec: { ...got.body.spec, renewTime: "2024-01-02T10:04:05.9876543-05:00" },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.spec.renewTime).toBe("2024-01-02T15:04:05.987654Z");
  });

  it("refuses a timestamp that is not RFC 3339 with 400", async () => {
    for (const bad of [
      "yesterday",
      "2024-01-02 15:04:05",
      "2024-13-02T15:04:05Z",
      "2024-02-30T00:00:00Z",
      12,
    ]) {
      const r = await h.post(LEASES, lease("bad", { acquireTime: bad }));
      expect(r.status, String(bad)).toBe(400);
      expect(r.body).toMatchObject({ kind: "Status", reason: "BadRequest", code: 400 });
      expect(r.body.message).toMatch(
        typeof bad === "string"
          ? /^Lease in version "v1" cannot be handled as a Lease: parsing time /
          : /^Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal number/,
      );
    }
    expect((await h.get(`${LEASES}/bad`)).status).toBe(404);
  });

  it("reads any RFC 3339 time as the instant it names (property)", () => {
    const instant = fc.integer({ min: Date.UTC(1970, 0, 1), max: Date.UTC(2200, 0, 1) });
    const offset = fc.integer({ min: -14 * 60, max: 14 * 60 });
    const micros = fc.integer({ min: 0, max: 999 });
    fc.assert(
      fc.property(instant, offset, micros, (ms, off, us) => {
        const local = new Date(ms + off * 60_000).toISOString().slice(0, 23);
        const sign = off < 0 ? "-" : "+";
        const a = Math.abs(off);
        const zone = `${sign}${String(Math.floor(a / 60)).padStart(2, "0")}:${String(a % 60).padStart(2, "0")}`;
        const sent = `${local}${String(us).padStart(3, "0")}${zone}`;
        const utc = new Date(ms).toISOString();
        expect(canonicalTimestamp(sent, "micro")).toBe(
          `${utc.slice(0, 23)}${String(us).padStart(3, "0")}Z`,
        );
        expect(canonicalTimestamp(sent, "time")).toBe(`${utc.slice(0, 19)}Z`);
      }),
    );
  });
});

describe("empty lists and maps", () => {
  it("are left out of metadata and of built-in types' fields, as Go's omitempty does", async () => {
    const r = await h.post(CM, {
      ...configMap("e1"),
      metadata: { name: "e1", labels: {}, annotations: {}, ownerReferences: [], finalizers: [] },
      data: {},
    });
    expect(r.status).toBe(201);
    for (const k of ["labels", "annotations", "ownerReferences", "finalizers"]) {
      expect(r.body.metadata, k).not.toHaveProperty(k);
    }
    expect(r.body).not.toHaveProperty("data");
  });

  it("drops an emptied ownerReferences list (an orphaned dependent)", async () => {
    const owner = await h.post(CM, configMap("owner"));
    const dep = await h.post(CM, {
      ...configMap("dependent", { a: "1" }),
      metadata: {
        name: "dependent",
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.body.metadata.uid },
        ],
      },
    });
    expect(dep.body.metadata.ownerReferences).toHaveLength(1);
    const orphaned = await h.patch(
      `${CM}/dependent`,
      [{ op: "replace", path: "/metadata/ownerReferences", value: [] }],
      "application/json-patch+json",
    );
    expect(orphaned.status).toBe(200);
    expect(orphaned.body.metadata).not.toHaveProperty("ownerReferences");
    expect((await h.get(`${CM}/dependent`)).body.metadata).not.toHaveProperty("ownerReferences");
  });

  it("keeps a custom resource's own empty lists, and drops its metadata's", async () => {
    const r = await h.post(WD, {
      ...widget("w1", { items: [], replicas: 1 }),
      metadata: { name: "w1", labels: {} },
    });
    expect(r.status).toBe(201);
    expect(r.body.metadata).not.toHaveProperty("labels");
    expect(r.body.spec.items).toEqual([]);
  });
});
