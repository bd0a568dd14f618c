/**
 * Requests in flight, bounded as kube-apiserver bounds them: with one mutating seat
 * held by a write whose body is still arriving, another write by an ordinary user
 * is answered 429 with `Retry-After: 1` in kube-apiserver's words, reads and
 * watches go on, the refusal is counted in apiserver_request_total, system:masters is always answered, and kubectl and the runtime's
 * client send the write again and succeed once the seat is free.
 */
import https from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../../src/apiserver/server/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let srv: TestServer;
let admin: Kubectl;
let user: Kubectl;
let token = "";

beforeAll(async () => {
  srv = await startTestServer({ tls: true, inflight: { mutating: 1, readOnly: 2 } });
  admin = new Kubectl(srv.kubeconfigPath);
  await admin.ok(["create", "serviceaccount", "writer", "-n", "default"]);
  await admin.ok([
    "create",
    "clusterrolebinding",
    "writer",
    "--clusterrole=cluster-admin",
    "--serviceaccount=default:writer",
  ]);
  token = (await admin.ok(["create", "token", "writer", "-n", "default"])).trim();
  const kubeconfig = join(admin.home, "writer-kubeconfig");
  await writeKubeconfig(kubeconfig, { server: srv.url, caCert: srv.caCert!, token });
  user = new Kubectl(kubeconfig);
}, 60_000);

afterAll(async () => {
  await user?.close();
  await admin?.close();
  await srv?.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request to the server; `hold` sends the headers and half the body, and waits. */
function send(
  method: string,
  path: string,
  opts: { body?: string; bearer?: string; hold?: boolean } = {},
): { answer: Promise<Answer>; abort(): void } {
  const url = new URL(path, srv.url);
  const body = opts.body ?? "";
  const req = https.request(url, {
    method,
    ca: srv.caCert,
    headers: {
      authorization: `Bearer ${opts.bearer ?? token}`,
      "content-type": "application/json",
      ...(body ? { "content-length": Buffer.byteLength(body) } : {}),
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c) => {
        text += c;
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
      );
    });
    req.on("error", reject);
  });
  answer.catch(() => undefined);
  if (opts.hold) req.write(body.slice(0, body.length / 2));
  else req.end(body);
  return { answer, abort: () => req.destroy() };
}

const CM = "/api/v1/namespaces/default/configmaps";
const cm = (name: string) =>
  JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { a: "1" } });

describe("requests in flight", () => {
  it("answers a write with no seat 429, Retry-After 1, while reads, watches and the admin go on", async () => {
    const held = send("POST", CM, { body: cm("slow"), hold: true });
    try {
      const refused = await eventually(async () => {
        const r = await send("POST", CM, { body: cm("second") }).answer;
        return r.status === 429 ? r : undefined;
      }, "a write refused while the seat is held");
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.headers["content-type"]).toBe("text/plain; charset=utf-8");
      expect(refused.body).toBe("Too many requests, please try again later.\n");
      // Counted in apiserver_request_total, as kube-apiserver counts what its limit drops.
      const metrics = (await send("GET", "/metrics", { bearer: srv.token! }).answer).body;
      expect(metrics).toMatch(
        /^apiserver_request_total\{[^}]*verb="POST"[^}]*resource="configmaps"[^}]*code="429"[^}]*\} [1-9]/m,
      );
      // Reads have seats of their own; a watch takes none.
      const watch = send("GET", `${CM}?watch=true`);
      const watch2 = send("GET", `${CM}?watch=true`);
      for (let i = 0; i < 3; i++) {
        expect((await send("GET", CM).answer).status).toBe(200);
      }
      watch.abort();
      watch2.abort();
      // system:masters is always answered.
      const root = await send("POST", CM, { body: cm("by-admin"), bearer: srv.token! }).answer;
      expect(root.status).toBe(201);
    } finally {
      held.abort();
    }
    // The seat is given back with the connection.
    await eventually(
      async () =>
        (await send("POST", CM, { body: cm("after") }).answer).status === 201 ? true : undefined,
      "a write served once the seat is free",
    );
  });

  it("is ridden out by kubectl and the runtime's client, which send again after Retry-After", async () => {
    const held = send("POST", CM, { body: cm("slow-2"), hold: true });
    await eventually(async () => {
      const r = await send("POST", CM, { body: cm("probe") }).answer;
      return r.status === 429 ? true : undefined;
    }, "the seat is held");
    const client = srv.newClient({ token });
    const created = client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "from-client", namespace: "default" },
      data: { a: "1" },
    });
    const kubectl = user.run(["create", "configmap", "from-kubectl", "-n", "default"]);
    // Free the seat after both have met a 429 at least once.
    setTimeout(() => held.abort(), 1_500);
    expect((await created).metadata.name).toBe("from-client");
    const k = await kubectl;
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout).toContain("configmap/from-kubectl created");
  });
});
