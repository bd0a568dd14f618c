/**
 * Hostile requests: each attack that once crashed or froze the server, scaled down
 * to stay quick, against a real server over real HTTP. Each one is refused or cut
 * off by its bound, and the server keeps answering /healthz and a plain GET from
 * another client meanwhile and afterwards. (The fuzz test, fuzz.test.ts, sends the
 * malformed requests of every other kind.)
 */
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_JSON_PATCH_COPY_BYTES } from "../../packages/api/src/patch/json.ts";
import { JSON_INLINE_BYTES } from "../../src/apiserver/wire/index.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

/** Shortened so that the test sees them pass; the defaults are Kubernetes' 32 s and 60 s. */
const HEADERS_TIMEOUT_MS = 600;
const REQUEST_TIMEOUT_MS = 900;

interface Answer {
  code: number;
  body: string;
  json: Record<string, unknown>;
}

function send(
  base: string,
  method: string,
  path: string,
  body?: string,
  contentType = "application/json",
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent: false,
        headers: body === undefined ? {} : { "content-type": contentType },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON (healthz)
          }
          resolve({ code: res.statusCode ?? 0, body: text, json });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** What a raw connection received until the server closed it. */
function rawUntilClosed(socket: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
  });
}

describe("hostile requests", () => {
  const server = startForFile(() => startTestServer());
  const base = () => server.url;

  /** The server at `at` answers /healthz and a plain GET of an object. */
  async function stillServing(at = base()): Promise<void> {
    const health = await send(at, "GET", "/healthz");
    expect(health).toMatchObject({ code: 200, body: "ok" });
    const ns = await send(at, "GET", "/api/v1/namespaces/default");
    expect(ns.code).toBe(200);
    expect(ns.json.metadata).toMatchObject({ name: "default" });
  }

  beforeAll(async () => {
    const cm = await send(
      base(),
      "POST",
      "/api/v1/namespaces/default/configmaps",
      JSON.stringify({ metadata: { name: "target" }, data: { a: "x".repeat(100) } }),
    );
    expect(cm.code).toBe(201);
  });

  describe("JSON patch amplification", () => {
    const copies = (n: number) =>
      JSON.stringify(
        Array.from({ length: n }, (_, i) => ({ op: "copy", from: "/data", path: `/data/c${i}` })),
      );

    for (const dryRun of ["", "?dryRun=All"]) {
      it(`refuses 28 copies of /data into itself with 422${dryRun ? ", also dry run" : ""}`, async () => {
        const body = copies(28);
        expect(body.length).toBeLessThan(1600);
        const res = await send(
          base(),
          "PATCH",
          `/api/v1/namespaces/default/configmaps/target${dryRun}`,
          body,
          "application/json-patch+json",
        );
        expect(res.code).toBe(422);
        expect(res.json.reason).toBe("Invalid");
        expect(String(res.json.message)).toContain(`the accumulated size increase of copy is`);
        expect(String(res.json.message)).toContain(
          `exceeding the limit ${MAX_JSON_PATCH_COPY_BYTES}`,
        );
        await stillServing();
      });
    }

    it("refuses more than 10,000 operations with 413", async () => {
      const ops = JSON.stringify(
        Array.from({ length: 10_001 }, () => ({ op: "test", path: "/data/a", value: "x" })),
      );
      const res = await send(
        base(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/target",
        ops,
        "application/json-patch+json",
      );
      expect(res.code).toBe(413);
      expect(res.json.message).toBe(
        "The allowed maximum operations in a JSON patch is 10000, got 10001",
      );
      await stillServing();
    });
  });

  describe("backtracking regular expressions", () => {
    const evil = `${"a".repeat(60)}!`;

    beforeAll(async () => {
      const crd = {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "patterns.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "patterns", singular: "pattern", kind: "Pattern" },
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
                      properties: {
                        byPattern: { type: "string", pattern: "^(a+)+$" },
                        byRule: {
                          type: "string",
                          maxLength: 100,
                          "x-kubernetes-validations": [{ rule: "self.matches('^(a+)+$')" }],
                        },
                      },
                    },
                  },
                },
              },
            },
          ],
        },
      };
      const res = await send(
        base(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON.stringify(crd),
      );
      expect(res.code).toBe(201);
      await eventually(async () => {
        const list = await send(base(), "GET", "/apis/example.com/v1/namespaces/default/patterns");
        return list.code === 200;
      }, "the Pattern type served");
    });

    for (const field of ["byPattern", "byRule"]) {
      it(`validates ${field} ^(a+)+$ against sixty a's and a ! and refuses it`, async () => {
        const res = await send(
          base(),
          "POST",
          "/apis/example.com/v1/namespaces/default/patterns",
          JSON.stringify({
            apiVersion: "example.com/v1",
            kind: "Pattern",
            metadata: { name: `p-${field.toLowerCase()}` },
            spec: { [field]: evil },
          }),
        );
        expect(res.code).toBe(422);
        expect(String(res.json.message)).toContain(`spec.${field}`);
        await stillServing();
      });
    }

    it("refuses a CRD whose pattern RE2 cannot run", async () => {
      const res = await send(
        base(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON.stringify({
          apiVersion: "apiextensions.k8s.io/v1",
          kind: "CustomResourceDefinition",
          metadata: { name: "lookaheads.example.com" },
          spec: {
            group: "example.com",
            scope: "Namespaced",
            names: { plural: "lookaheads", singular: "lookahead", kind: "Lookahead" },
            versions: [
              {
                name: "v1",
                served: true,
                storage: true,
                schema: {
                  openAPIV3Schema: {
                    type: "object",
                    properties: { name: { type: "string", pattern: "^(?!admin)" } },
                  },
                },
              },
            ],
          },
        }),
      );
      expect(res.code).toBe(422);
      expect(String(res.json.message)).toContain(
        "must be a valid regular expression, but isn't: error parsing regexp: invalid or unsupported Perl syntax: `(?!`",
      );
    });
  });

  describe("large YAML bodies", () => {
    const yamlConfigMap = (name: string, keys: number, extra = "") =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Array.from(
        { length: keys },
        (_, i) => `  k${i}: v\n`,
      ).join("")}${extra}`;

    it("decodes 50,000 values off the event loop while others are answered", async () => {
      const pending = send(
        base(),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        yamlConfigMap("big-yaml", 50_000),
        "application/yaml",
      );
      await stillServing();
      const res = await pending;
      expect(res.code).toBe(201);
      expect(Object.keys(res.json.data as object)).toHaveLength(50_000);
    });

    it("still finds duplicate fields and YAML errors in large bodies", async () => {
      const dup = await send(
        base(),
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        yamlConfigMap("dup-yaml", 5_000, "  k0: again\n"),
        "application/yaml",
      );
      expect(dup.code).toBe(400);
      expect(String(dup.json.message)).toContain('duplicate field "data.k0"');
      const broken = await send(
        base(),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        `${yamlConfigMap("broken-yaml", 5_000)}  - [\n`,
        "application/yaml",
      );
      expect(broken.code).toBe(400);
      expect(String(broken.json.message)).toContain("error converting YAML to JSON: yaml:");
      await stillServing();
    });
  });

  describe("large JSON bodies", () => {
    /** A ConfigMap of `keys` keys, its JSON text with `extra` members appended to its data. */
    const jsonConfigMap = (name: string, keys: number, extra = "") => {
      const data = Array.from({ length: keys }, (_, i) => `"k${i}":"${"v".repeat(20)}"`).join(",");
      return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"data":{${data}${extra}}}`;
    };

    it("decodes a body of hundreds of kilobytes off the event loop while others are answered", async () => {
      const body = jsonConfigMap("big-json", 12_000);
      expect(body.length).toBeGreaterThan(JSON_INLINE_BYTES);
      const pending = send(base(), "POST", "/api/v1/namespaces/default/configmaps", body);
      await stillServing();
      const res = await pending;
      expect(res.code).toBe(201);
      expect(Object.keys(res.json.data as object)).toHaveLength(12_000);
      const read = await send(base(), "GET", "/api/v1/namespaces/default/configmaps/big-json");
      expect((read.json.data as Record<string, string>).k11999).toBe("v".repeat(20));
    });

    it("still finds duplicate fields and JSON errors in large bodies", async () => {
      const dup = await send(
        base(),
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        jsonConfigMap("dup-json", 12_000, ',"k7":"again"'),
      );
      expect(dup.code).toBe(400);
      expect(String(dup.json.message)).toContain('duplicate field "data.k7"');
      const broken = await send(
        base(),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        jsonConfigMap("broken-json", 12_000).slice(0, -2),
      );
      expect(broken.code).toBe(400);
      expect(String(broken.json.message)).toMatch(
        /^couldn't get version\/kind; json parse error: /,
      );
      // A large merge patch is decoded the same way.
      const patched = await send(
        base(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/target?fieldValidation=Strict",
        `{"data":{"big":"${"b".repeat(JSON_INLINE_BYTES)}","a":"y","a":"z"}}`,
        "application/merge-patch+json",
      );
      expect(patched.code).toBe(400);
      expect(String(patched.json.message)).toContain('duplicate field "data.a"');
      await stillServing();
    });
  });

  describe("huge enums", () => {
    it("serves a CRD with 100,000 enum values and checks objects against them", async () => {
      const values = Array.from({ length: 100_000 }, (_, i) => `v${i}`);
      const crd = {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "enums.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "enums", singular: "enum", kind: "Enum" },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: "object",
                  properties: {
                    spec: { type: "object", properties: { v: { type: "string", enum: values } } },
                  },
                },
              },
            },
          ],
        },
      };
      const created = send(
        base(),
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON.stringify(crd),
      );
      await stillServing();
      expect((await created).code).toBe(201);
      await eventually(async () => {
        const list = await send(base(), "GET", "/apis/example.com/v1/namespaces/default/enums");
        return list.code === 200;
      }, "the Enum type served");
      const make = (name: string, v: string) =>
        send(
          base(),
          "POST",
          "/apis/example.com/v1/namespaces/default/enums",
          JSON.stringify({
            apiVersion: "example.com/v1",
            kind: "Enum",
            metadata: { name },
            spec: { v },
          }),
        );
      expect((await make("good", "v99999")).code).toBe(201);
      const bad = await make("bad", "nope");
      expect(bad.code).toBe(422);
      expect(String(bad.json.message)).toContain('spec.v: Unsupported value: "nope"');
      await stillServing();
    });
  });

  describe("trickling clients", () => {
    // A server of their own with the timeouts shortened: the heavy requests above
    // would run into a 900 ms request deadline on a busy machine.
    const trickled = startForFile(() =>
      startTestServer({
        connections: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS },
      }),
    );
    const base = () => trickled.url;
    const port = () => Number(new URL(trickled.url).port);
    it("answers 504 to a body that trickles, and closes its connection", async () => {
      const socket = await connect(port());
      const received = rawUntilClosed(socket);
      socket.write(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
      );
      const drip = setInterval(() => socket.write(" "), 100);
      try {
        await stillServing(base());
        const text = await received;
        expect(text.split("\r\n")[0]).toBe("HTTP/1.1 504 Gateway Timeout");
        // kube-apiserver's timeout filter: a bare Status, sent as text/plain.
        expect(text.toLowerCase()).toContain("content-type: text/plain; charset=utf-8");
        const status = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as Record<
          string,
          unknown
        >;
        expect(status).toEqual({
          metadata: {},
          status: "Failure",
          code: 504,
          reason: "Timeout",
          details: {},
          message: "Timeout: request did not complete within the allotted timeout",
        });
      } finally {
        clearInterval(drip);
        socket.destroy();
      }
      await stillServing(base());
    });

    it("closes a connection whose headers trickle, and one that sends nothing", async () => {
      const trickle = await connect(port());
      const idle = await connect(port());
      const trickled = rawUntilClosed(trickle);
      const idled = rawUntilClosed(idle);
      trickle.write("GET /healthz HTTP/1.1\r\n");
      const drip = setInterval(() => trickle.write("X-A: b\r\n"), 100);
      try {
        await stillServing(base());
        expect(await trickled).toBe("");
        expect(await idled).toBe("");
      } finally {
        clearInterval(drip);
        trickle.destroy();
        idle.destroy();
      }
      await stillServing(base());
    });

    it("does not cut off a watch that lasts longer than the request timeout", async () => {
      const path =
        "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dlater";
      const events: string[] = [];
      let closed = false;
      const req = http.get(new URL(path, base()), { agent: false }, (res) => {
        res.setEncoding("utf8");
        res.on("data", (d: string) => events.push(d));
        res.on("close", () => {
          closed = true;
        });
      });
      req.on("error", () => {});
      try {
        // Longer than both timeouts, then a change the watch must still report.
        await new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS + HEADERS_TIMEOUT_MS + 500));
        expect(closed).toBe(false);
        const created = await send(
          base(),
          "POST",
          "/api/v1/namespaces/default/configmaps",
          JSON.stringify({ metadata: { name: "later" } }),
        );
        expect(created.code).toBe(201);
        await eventually(() => events.join("").includes('"type":"ADDED"'), "the ADDED event");
        expect(closed).toBe(false);
      } finally {
        req.destroy();
      }
    });
  });
});

describe("connection bound", () => {
  const MAX = 8;
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({ connections: { maxConnections: MAX } });
  });
  afterAll(async () => {
    await server.stop();
  });

  /** The first line of the answer to a /healthz on `s`, or "" when the server closed it. */
  function healthOn(s: net.Socket): Promise<string> {
    const received = rawUntilClosed(s);
    s.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return received.then((text) => text.split("\r\n")[0] ?? "");
  }

  it("closes connections past the bound at once, and serves again when they go", async () => {
    const port = Number(new URL(server.url).port);
    // Held open without a request, so that each one counts until the end.
    const held = await Promise.all(Array.from({ length: MAX + 4 }, () => connect(port)));
    try {
      const closedAtOnce = await Promise.all(
        held.map(
          (s) =>
            new Promise<boolean>((resolve) => {
              const t = setTimeout(() => resolve(false), 2_000);
              s.once("close", () => {
                clearTimeout(t);
                resolve(true);
              });
            }),
        ),
      );
      // The server's own clients hold some connections too: at least the extra four go.
      expect(closedAtOnce.filter(Boolean).length).toBeGreaterThanOrEqual(4);
      expect(closedAtOnce.filter((c) => !c).length).toBeLessThanOrEqual(MAX);
    } finally {
      for (const s of held) s.destroy();
    }
    await eventually(
      async () => (await healthOn(await connect(port))) === "HTTP/1.1 200 OK",
      "a new connection served",
    );
  });
});
