/**
 * Request deadlines, as kube-apiserver's --request-timeout and `?timeout=` set them:
 * a request still being worked on at its deadline (here a create held up by a
 * validating webhook that answers only when the test lets it) is answered 504 with
 * the Status kube-apiserver's timeout filter writes, while its work goes on and
 * completes in the background; a malformed `?timeout=` is a 400; a watch has no
 * deadline. No waiting on time: the webhook is released by the test.
 */
import http from "node:http";
import https from "node:https";
import { validatingHandler, WebhookServer } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseGoDuration } from "../../src/apiserver/endpoints/request-deadline.ts";
import { generateTlsMaterial } from "../../src/apiserver/server/index.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * The bytes kube-apiserver's timeout filter writes: Go's JSON encoder on a bare
 * metav1.Status (fields in struct order, no kind or apiVersion), then a newline.
 */
const TIMED_OUT_TEXT =
  '{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout",' +
  '"reason":"Timeout","details":{},"code":504}\n';

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** One request to `s` (over https with its CA when it has one), as `token`'s user. */
function request(
  s: TestServer,
  method: string,
  path: string,
  body?: unknown,
  token = s.token,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = data ? { "Content-Type": "application/json" } : {};
    if (token) headers.Authorization = `Bearer ${token}`;
    const send = (s.caCert ? https.request : http.request) as typeof http.request;
    const req = send(
      `${s.url}${path}`,
      { method, agent: false, headers, ...(s.caCert ? { ca: s.caCert } : {}) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers["content-type"] ?? ""),
            text,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

/** A watch whose event lines are collected until it is closed. */
function openWatch(base: string, path: string): Promise<{ lines: string[]; close(): void }> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const req = http.get(`${base}${path}`, { agent: false }, (res) => {
      let rest = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        rest += c;
        let nl = rest.indexOf("\n");
        while (nl >= 0) {
          lines.push(rest.slice(0, nl));
          rest = rest.slice(nl + 1);
          nl = rest.indexOf("\n");
        }
      });
      res.on("error", () => {});
      resolve({ lines, close: () => req.destroy() });
    });
    req.on("error", reject);
  });
}

async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("condition not met");
}

describe("request deadlines", () => {
  let srv: TestServer;
  /** The same, with a 1 s --request-timeout. */
  let short: TestServer;
  /** Over https with authentication, one mutating request at a time. */
  let guarded: TestServer;
  let hooks: WebhookServer;
  /** Webhook calls waiting for the test to let them answer. */
  const held: (() => void)[] = [];

  beforeAll(async () => {
    srv = await startTestServer();
    short = await startTestServer({ connections: { requestTimeoutMs: 1000 } });
    guarded = await startTestServer({ tls: true, inflight: { mutating: 1 } });
    const tls = await generateTlsMaterial(["127.0.0.1"]);
    hooks = new WebhookServer({ cert: tls.cert, key: tls.key });
    hooks.register(
      "/hold",
      validatingHandler(
        () => new Promise<undefined>((resolve) => held.push(() => resolve(undefined))),
      ),
    );
    await hooks.start();
    const config = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: "hold" },
      webhooks: [
        {
          name: "hold.example.com",
          clientConfig: {
            url: hooks.url("/hold"),
            caBundle: Buffer.from(tls.caCert).toString("base64"),
          },
          rules: [
            {
              operations: ["CREATE"],
              apiGroups: [""],
              apiVersions: ["v1"],
              resources: ["configmaps"],
            },
          ],
          namespaceSelector: { matchLabels: { hold: "yes" } },
          timeoutSeconds: 30,
          sideEffects: "None",
          admissionReviewVersions: ["v1"],
        },
      ],
    };
    for (const s of [srv, short, guarded]) {
      const made = await request(
        s,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        config,
      );
      expect(made.status).toBe(201);
      const ns = {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: "held", labels: { hold: "yes" } },
      };
      expect((await request(s, "POST", "/api/v1/namespaces", ns)).status).toBe(201);
    }
  }, 60_000);

  afterAll(async () => {
    for (const release of held.splice(0)) release();
    await hooks?.stop();
    await srv?.stop();
    await short?.stop();
    await guarded?.stop();
  });

  const configMap = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });
  const P = "/api/v1/namespaces/held/configmaps";

  it("answers 504 Timeout at the client's ?timeout= and lets the work finish in the background", async () => {
    const watch = await openWatch(srv.url, `${P}?watch=1&timeout=1s`);
    try {
      const r = await request(srv, "POST", `${P}?timeout=1s`, configMap("late"));
      expect(r.status).toBe(504);
      expect(r.contentType).toBe("text/plain; charset=utf-8");
      expect(r.text).toBe(TIMED_OUT_TEXT);
      // Not stored yet: the webhook still holds the create.
      expect((await request(srv, "GET", `${P}/late`)).status).toBe(404);
      expect(held.length).toBe(1);
      held.shift()!();
      await eventually(async () => (await request(srv, "GET", `${P}/late`)).status === 200);
      // The watch asked for the same timeout and was opened before the create: long
      // past its 1 s, it is open and gets the event.
      await eventually(() => watch.lines.some((l) => l.includes('"name":"late"')));
      expect(JSON.parse(watch.lines.at(-1)!).type).toBe("ADDED");
    } finally {
      watch.close();
    }
  });

  it("answers within the server's --request-timeout whatever longer ?timeout= is asked", async () => {
    const r = await request(short, "POST", `${P}?timeout=1m`, configMap("later"));
    expect(r.status).toBe(504);
    expect(r.text).toBe(TIMED_OUT_TEXT);
    held.shift()!();
    await eventually(async () => (await request(short, "GET", `${P}/later`)).status === 200);
    // A request answered in time is answered as always.
    const quick = await request(short, "GET", `/api/v1/namespaces/held?timeout=30s`);
    expect(quick.status).toBe(200);
  });

  it("keeps the request's in-flight seat until its work is done, though answered at its deadline", async () => {
    // A ServiceAccount: not system:masters, so it gets no seat when none is free.
    const sa = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "other" } };
    expect(
      (await request(guarded, "POST", "/api/v1/namespaces/held/serviceaccounts", sa)).status,
    ).toBe(201);
    const issued = await request(
      guarded,
      "POST",
      "/api/v1/namespaces/held/serviceaccounts/other/token",
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
    );
    expect(issued.status).toBe(201);
    const token = JSON.parse(issued.text).status.token as string;
    const other = () => request(guarded, "POST", P, configMap("other"), token);

    const r = await request(guarded, "POST", `${P}?timeout=1s`, configMap("seated"));
    expect(r.status).toBe(504);
    // The one mutating seat is still the timed-out create's.
    expect((await other()).status).toBe(429);
    held.shift()!();
    // Once its work is done the seat is free: the other user is answered (RBAC refuses it).
    await eventually(async () => (await other()).status === 403);
    expect((await request(guarded, "GET", `${P}/seated`)).status).toBe(200);
  });

  it("refuses a ?timeout= that is not a Go duration with Kubernetes' 400", async () => {
    for (const [value, error] of [
      ["abc", 'time: invalid duration "abc"'],
      ["5", 'time: missing unit in duration "5"'],
      ["5x", 'time: unknown unit "x" in duration "5x"'],
    ]) {
      const r = await request(srv, "GET", `/api/v1/namespaces?timeout=${value}`);
      expect(r.status).toBe(400);
      const status = JSON.parse(r.text);
      expect(status).toMatchObject({
        kind: "Status",
        reason: "BadRequest",
        code: 400,
        message: `invalid timeout specified in the request URL - ${error}`,
      });
    }
  });

  it("reads Go durations", () => {
    expect(parseGoDuration("1s")).toBe(1000);
    expect(parseGoDuration("300ms")).toBe(300);
    expect(parseGoDuration("1h2m3.5s")).toBe(3_723_500);
    expect(parseGoDuration(".5s")).toBe(500);
    expect(parseGoDuration("-1m")).toBe(-60_000);
    expect(parseGoDuration("0")).toBe(0);
    expect(parseGoDuration("2µs")).toBe(0.002);
    for (const bad of ["", "s", "1.s.", "+", "1e3s", " 1s"]) {
      expect(() => parseGoDuration(bad), bad).toThrow(/^time: /);
    }
  });
});
