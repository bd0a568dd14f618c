/**
 * Answers that must match kube-apiserver's, over real HTTP to the apiserver:
 * impersonation headers honoured, dot segments never resolved, over-long names not
 * found, a create naming a resourceVersion refused, /openapi/v2 in JSON when JSON is
 * asked for.
 */
import https from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../e2e/helpers/http.ts";
import { type E2eServer, startE2eServer } from "../e2e/helpers/server.ts";

let srv: E2eServer;
beforeAll(async () => {
  srv = await startE2eServer({ tls: true });
});
afterAll(async () => {
  await srv?.close();
});

const CM = "/api/v1/namespaces/default/configmaps";
const cm = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...extra },
  data: { a: "1" },
});

describe("impersonation headers", () => {
  it("serve a caller allowed to impersonate as the user named, with that user's rights", async () => {
    const cases: [Record<string, string>, string, Record<string, string>][] = [
      [
        { "Impersonate-User": "jane" },
        'configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "default"',
        { kind: "configmaps" },
      ],
      [
        { "Impersonate-User": "system:serviceaccount:ns1:robot", "Impersonate-Group": "devs" },
        'configmaps is forbidden: User "system:serviceaccount:ns1:robot" cannot list resource "configmaps" in API group "" in the namespace "default"',
        { kind: "configmaps" },
      ],
    ];
    for (const [headers, message, details] of cases) {
      const r = await request(srv.target, "GET", CM, { headers });
      expect(r.code).toBe(403);
      expect(r.json).toMatchObject({
        kind: "Status",
        reason: "Forbidden",
        code: 403,
        message,
        details,
      });
      // Nothing is written as them.
      const w = await request(srv.target, "POST", CM, { headers, body: cm("as-someone") });
      expect(w.code).toBe(403);
    }
    expect((await request(srv.target, "GET", `${CM}/as-someone`)).code).toBe(404);
    // Impersonating a member of system:masters is being one.
    const root = await request(srv.target, "GET", CM, {
      headers: { "Impersonate-User": "jane", "Impersonate-Group": "system:masters" },
    });
    expect(root.code).toBe(200);
  });

  it("refuse groups or extras asked for without a user, as kube-apiserver does", async () => {
    const r = await request(srv.target, "GET", CM, {
      headers: { "Impersonate-Group": "devs", "Impersonate-Extra-Scopes": "view" },
    });
    expect(r.code).toBe(500);
    expect(r.json).toMatchObject({
      reason: "InternalError",
      message:
        "Internal error occurred: requested [{Group  devs    } {UserExtra   view  authentication.k8s.io/v1  scopes}] without impersonating a user",
    });
  });
});

/** GET with the path sent exactly as given (URL parsing would resolve dot segments). */
function rawGet(path: string): Promise<{ code: number; text: string }> {
  const { hostname, port } = new URL(srv.url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: hostname,
        port,
        path,
        method: "GET",
        ca: srv.target.ca,
        headers: { Authorization: `Bearer ${srv.target.token}`, Accept: "application/json" },
        agent: false,
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ code: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("paths", () => {
  it("never resolves dot segments to another resource", async () => {
    for (const path of [
      `${CM}/..`,
      `${CM}/%2e%2e`,
      `${CM}/.`,
      "/api/v1/namespaces/default/configmaps/../../default",
      "/api/v1/namespaces/default/./configmaps",
    ]) {
      const r = await rawGet(path);
      expect(r.code, path).toBe(404);
      expect(r.text, path).not.toContain('"kind":"Namespace"');
    }
  });

  it("answers 404 for a name too long for any object, on every verb", async () => {
    const name = "n".repeat(2000);
    for (const method of ["GET", "DELETE"]) {
      const r = await request(srv.target, method, `${CM}/${name}`);
      expect(r.code, method).toBe(404);
      expect(r.json).toMatchObject({ reason: "NotFound", code: 404 });
    }
    const patch = await request(srv.target, "PATCH", `${CM}/${name}`, {
      body: { data: { a: "2" } },
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    expect(patch.code).toBe(404);
  });
});

describe("create", () => {
  it("refuses a resourceVersion as kube-apiserver's storage does, ignoring non-numbers", async () => {
    const r = await request(srv.target, "POST", CM, {
      body: cm("with-rv", { resourceVersion: "42" }),
    });
    expect(r.code).toBe(500);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "resourceVersion should not be set on objects to be created",
      code: 500,
      details: {},
    });
    expect((await request(srv.target, "GET", `${CM}/with-rv`)).code).toBe(404);
    const ignored = await request(srv.target, "POST", CM, {
      body: cm("odd-rv", { resourceVersion: "-1" }),
    });
    expect(ignored.code).toBe(201);
  });
});

describe("/openapi/v2", () => {
  it("answers JSON when JSON is asked for, protobuf when protobuf is", async () => {
    const json = await request(srv.target, "GET", "/openapi/v2", {
      headers: { Accept: "application/json" },
    });
    expect(json.code).toBe(200);
    expect(json.headers["content-type"]).toMatch(/^application\/json/);
    expect(json.json).toMatchObject({ swagger: "2.0", info: { title: "Kubernetes" } });
    const pb = await request(srv.target, "GET", "/openapi/v2", {
      headers: { Accept: "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" },
    });
    expect(pb.code).toBe(200);
    expect(pb.headers["content-type"]).toMatch(/protobuf/);
  });
});
