import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addWidgetType, configMap, type Harness, startHarness } from "./harness.ts";

let h: Harness;
const CM = "/api/v1/namespaces/ns1/configmaps";

beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("ns1");
});
afterAll(async () => {
  await h.close();
});

function expectStatus(body: Record<string, unknown>, code: number, reason: string): void {
  expect(body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason });
  expect(typeof body.message).toBe("string");
  expect(body.details).toBeDefined();
}

describe("bad input", () => {
  it("refuses bodies over 3 MiB with 413", async () => {
    const big = configMap("big", { k: "x".repeat(3 * 1024 * 1024 + 10) });
    const r = await h.post(CM, big);
    expect(r.status).toBe(413);
    expectStatus(r.body, 413, "RequestEntityTooLarge");
    expect(r.body.message).toBe("Request entity too large: limit is 3145728");
    expect((await h.get(`${CM}/big`)).status).toBe(404);
  });

  it("lets a client still sending an oversized body finish its write and read the 413", async () => {
    // What kubectl does: send the whole body, reading the answer only afterwards.
    // The server answers at once; it must not reset the connection under the client
    // (which loses the answer and fails its write with a broken pipe).
    const { hostname, port } = new URL(h.url);
    const socket = connect(Number(port), hostname);
    const body = Buffer.alloc(24 * 1024 * 1024, 0x20);
    const head = `POST ${CM} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    socket.pause();
    const received: Buffer[] = [];
    const outcome = await new Promise<string>((resolve) => {
      socket.on("error", (e) => resolve(`error: ${e.message}`));
      socket.write(head);
      socket.write(body, (err) => {
        if (err) return;
        socket.on("data", (c: Buffer) => received.push(c));
        socket.on("end", () => resolve("end"));
        socket.resume();
      });
    });
    socket.destroy();
    expect(outcome).toBe("end");
    const text = Buffer.concat(received).toString("utf8");
    expect(text).toMatch(/^HTTP\/1.1 413 /);
    expect(text).toMatch(/\r\nConnection: close\r\n/i);
    expect(text).toContain('"message":"Request entity too large: limit is 3145728"');
  });

  it("refuses malformed JSON, YAML and protobuf with 400", async () => {
    const json = await h.request("POST", CM, {
      raw: '{"apiVersion": "v1", "kind": ',
      headers: { "content-type": "application/json" },
    });
    expect(json.status).toBe(400);
    expectStatus(json.body, 400, "BadRequest");
    const yaml = await h.request("POST", CM, {
      raw: "apiVersion: v1\nkind: [ConfigMap\n",
      headers: { "content-type": "application/yaml" },
    });
    expect(yaml.status).toBe(400);
    expectStatus(yaml.body, 400, "BadRequest");
    const pb = await h.request("POST", CM, {
      raw: Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xff, 0xff]),
      headers: { "content-type": "application/vnd.kubernetes.protobuf" },
    });
    expect(pb.status).toBe(400);
    expectStatus(pb.body, 400, "BadRequest");
    const notObject = await h.request("POST", CM, {
      raw: "[1,2]",
      headers: { "content-type": "application/json" },
    });
    expect(notObject.status).toBe(400);
    const unknownType = await h.request("POST", CM, {
      raw: "x",
      headers: { "content-type": "text/plain" },
    });
    expect(unknownType.status).toBe(415);
    expectStatus(unknownType.body, 415, "UnsupportedMediaType");
  });

  it("accepts YAML bodies", async () => {
    const r = await h.request("POST", CM, {
      raw: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n",
      headers: { "content-type": "application/yaml" },
    });
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({ k: "v" });
  });

  it("refuses an apiVersion or kind that does not match the path", async () => {
    const av = await h.post(CM, { ...configMap("av"), apiVersion: "apps/v1" });
    expect(av.status).toBe(400);
    expect(av.body.message).toBe(
      "the API version in the data (apps/v1) does not match the expected API version (v1)",
    );
    const kind = await h.post(CM, { ...configMap("kind"), kind: "Secret" });
    expect(kind.status).toBe(400);
    expect(kind.body.message).toContain("cannot be handled as a ConfigMap");
  });

  it("refuses invalid names and label values with 422 and field causes", async () => {
    const name = await h.post(CM, configMap("Bad_Name"));
    expect(name.status).toBe(422);
    expectStatus(name.body, 422, "Invalid");
    expect(name.body.details).toMatchObject({ name: "Bad_Name", kind: "ConfigMap" });
    expect(name.body.details.causes[0]).toMatchObject({
      reason: "FieldValueInvalid",
      field: "metadata.name",
    });
    expect(name.body.message).toMatch(
      /^ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": /,
    );
    const label = await h.post(CM, configMap("labels", {}, { labels: { ok: "bad value!" } }));
    expect(label.status).toBe(422);
    expect(label.body.details.causes[0].field).toBe("metadata.labels");
    const missing = await h.post(CM, { apiVersion: "v1", kind: "ConfigMap", metadata: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.details.causes[0]).toMatchObject({
      reason: "FieldValueRequired",
      field: "metadata.name",
    });
  });

  it("handles unknown fields per fieldValidation", async () => {
    const body = { ...configMap("unk"), spec: { foo: 1 }, extra: true };
    const strict = await h.post(`${CM}?fieldValidation=Strict`, body);
    expect(strict.status).toBe(400);
    expect(strict.body.message).toBe(
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec", unknown field "extra"',
    );
    const warn = await h.post(CM, body);
    expect(warn.status).toBe(201);
    expect(warn.headers.warning).toBe(
      '299 - "unknown field \\"spec\\"", 299 - "unknown field \\"extra\\""',
    );
    expect(warn.body.spec).toBeUndefined();
    const stored = await h.get(`${CM}/unk`);
    expect(stored.body.extra).toBeUndefined();
    const ignore = await h.post(`${CM}?fieldValidation=Ignore`, {
      ...body,
      metadata: { name: "unk2" },
    });
    expect(ignore.status).toBe(201);
    expect(ignore.headers.warning).toBeUndefined();
    const nested = await h.post(`${CM}?fieldValidation=Strict`, {
      ...configMap("unk3"),
      metadata: { name: "unk3", bogus: 1 },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.message).toContain('unknown field "metadata.bogus"');
    const bad = await h.post(`${CM}?fieldValidation=Sometimes`, configMap("unk4"));
    expect(bad.status).toBe(422);
  });

  it("handles duplicate fields per fieldValidation", async () => {
    const raw =
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupf","name":"dupf"},"data":{"a":"1"}}';
    const strict = await h.request("POST", `${CM}?fieldValidation=Strict`, {
      raw,
      headers: { "content-type": "application/json" },
    });
    expect(strict.status).toBe(400);
    expect(strict.body.message).toContain('duplicate field "metadata.name"');
    const warn = await h.request("POST", CM, {
      raw,
      headers: { "content-type": "application/json" },
    });
    expect(warn.status).toBe(201);
    expect(warn.headers.warning).toContain('duplicate field \\"metadata.name\\"');
  });

  it("refuses values of the wrong type for built-in types with 400", async () => {
    const r = await h.post(CM, { ...configMap("types"), data: { a: 1 } });
    expect(r.status).toBe(400);
    expect(r.body.message).toContain("cannot unmarshal number");
    const meta = await h.post(CM, { apiVersion: "v1", kind: "ConfigMap", metadata: "oops" });
    expect(meta.status).toBe(400);
  });

  it("answers 406 for an Accept it cannot produce", async () => {
    await h.post(CM, configMap("acc"));
    const r = await h.get(`${CM}/acc`, { accept: "application/xml" });
    expect(r.status).toBe(406);
    expectStatus(r.body, 406, "NotAcceptable");
    const yaml = await h.get(`${CM}/acc`, { accept: "application/yaml" });
    expect(yaml.status).toBe(200);
    expect(yaml.headers["content-type"]).toBe("application/yaml");
    expect(yaml.text).toContain("name: acc");
  });

  it("survives bad query parameters", async () => {
    const r = await h.get(`${CM}?limit=abc`);
    expect(r.status).toBe(400);
    const w = await h.get(`${CM}?watch=maybe`);
    expect(w.status).toBe(400);
    const ls = await h.get(`${CM}?labelSelector=a%20in%20(`);
    expect(ls.status).toBe(400);
    const fs = await h.get(`${CM}?fieldSelector=spec.foo%3Dbar`);
    expect(fs.status).toBe(400);
    expect(fs.body.message).toBe(
      'Unable to find "/v1, Resource=configmaps" that match label selector "", field selector "spec.foo=bar": field label not supported: spec.foo',
    );
    const tok = await h.get(`${CM}?limit=1&continue=garbage!`);
    expect(tok.status).toBe(400);
    expect(tok.body.message).toContain("invalid continue token");
  });
});
