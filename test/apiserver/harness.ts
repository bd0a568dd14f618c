/**
 * Test harness: the API handler on a real SQLite file behind a plain node:http
 * server on a free port, and a small HTTP client for it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ApiHandler,
  type ApiLimits,
  createApiHandler,
} from "../../src/apiserver/endpoints/handler.ts";
import { createBuiltinRegistry, type Registry } from "../../src/registry/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface Harness {
  url: string;
  store: SqliteStore;
  registry: Registry;
  handler: ApiHandler;
  dir: string;
  request(method: string, path: string, opts?: RequestOptions): Promise<Reply>;
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  put(path: string, body: unknown, headers?: Record<string, string>): Promise<Reply>;
  patch(path: string, body: unknown, contentType: string): Promise<Reply>;
  del(path: string, body?: unknown): Promise<Reply>;
  /** Creates a namespace (and fails the test if that fails). */
  namespace(name: string): Promise<void>;
  close(): Promise<void>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

export interface HarnessOptions {
  limits?: Partial<ApiLimits>;
  /** Adjusts the registry before the handler starts. */
  registry?: (reg: Registry) => void;
  /**
   * Serves this store (another harness's: a second apiserver on the same
   * storage) instead of a new one; it is left open on close.
   */
  store?: SqliteStore;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const limits = opts.limits ?? {};
  const dir = mkdtempSync(join(tmpdir(), "setpoint-api-"));
  const store = opts.store ?? SqliteStore.open(join(dir, "data.db"), { durable: false });
  const registry = createBuiltinRegistry();
  opts.registry?.(registry);
  const handler = await createApiHandler({ store, registry, limits });
  const server = http.createServer((req, res) => {
    handler
      .handle(req, res, { name: "admin", groups: ["system:masters"] })
      .then((served) => {
        if (!served) {
          res.statusCode = 404;
          res.end("404 page not found");
        }
      })
      .catch((err) => {
        res.statusCode = 599;
        res.end(String(err));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  for (let i = 0; i < 200 && !handler.ready(); i++) await new Promise((r) => setTimeout(r, 10));

  const request = (method: string, path: string, opts: RequestOptions = {}): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      let data: string | Buffer | undefined;
      if (opts.raw !== undefined) data = opts.raw;
      else if (opts.body !== undefined) {
        data = JSON.stringify(opts.body);
        headers["content-type"] ??= "application/json";
      }
      if (data !== undefined) headers["content-length"] = String(Buffer.byteLength(data));
      const req = http.request(`${url}${path}`, { method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(data);
    });

  const h: Harness = {
    url,
    store,
    registry,
    handler,
    dir,
    request,
    get: (path, headers) => request("GET", path, headers ? { headers } : {}),
    post: (path, body, headers) => request("POST", path, { body, ...(headers ? { headers } : {}) }),
    put: (path, body, headers) => request("PUT", path, { body, ...(headers ? { headers } : {}) }),
    patch: (path, body, contentType) =>
      request("PATCH", path, {
        raw: typeof body === "string" ? body : JSON.stringify(body),
        headers: { "content-type": contentType },
      }),
    del: (path, body) => request("DELETE", path, body === undefined ? {} : { body }),
    async namespace(name: string) {
      const r = await request("POST", "/api/v1/namespaces", {
        body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
      });
      if (r.status !== 201) throw new Error(`creating namespace ${name}: ${r.status} ${r.text}`);
    },
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!opts.store) await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

/** A ConfigMap body. */
export function configMap(
  name: string,
  data: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, ...extra }, data };
}

/**
 * Registers a custom-resource-like type for tests: widgets.example.com/v1,
 * namespaced, with a status subresource, a schema default (spec.color: blue) and a
 * rule (spec.replicas must not be negative).
 */
export function addWidgetType(registry: Registry): void {
  const cm = registry.get("", "configmaps")!;
  const metadata = cm.versions[0].schema.properties!.metadata;
  registry.add({
    group: "example.com",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wd"],
      categories: [],
    },
    namespaced: true,
    custom: true,
    typed: false,
    returnDeletedObject: true,
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        statusSubresource: true,
        printerColumns: [],
        schema: {
          type: "object",
          properties: {
            apiVersion: { type: "string" },
            kind: { type: "string" },
            metadata,
            spec: {
              type: "object",
              properties: {
                replicas: { type: "integer" },
                color: { type: "string", default: "blue" },
                items: {
                  type: "array",
                  items: { type: "object", properties: { name: { type: "string" } } },
                },
              },
            },
            status: {
              type: "object",
              properties: { ready: { type: "boolean" }, observedGeneration: { type: "integer" } },
            },
          },
        },
      },
    ],
    strategy: {
      allowUnconditionalUpdate: false,
      tracksGeneration: true,
      selectableFields: {
        "spec.color": (obj) => (obj.spec as { color?: string } | undefined)?.color,
      },
      validate(obj) {
        const replicas = (obj.spec as { replicas?: unknown } | undefined)?.replicas;
        if (typeof replicas === "number" && replicas < 0) {
          return [
            {
              reason: "FieldValueInvalid",
              field: "spec.replicas",
              message: `Invalid value: ${replicas}: must be greater than or equal to 0`,
            },
          ];
        }
        return [];
      },
    },
  });
}

/** A Widget body. */
export function widget(name: string, spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: "example.com/v1", kind: "Widget", metadata: { name }, spec };
}

/** Waits until `fn` returns true (polling), or throws after `ms`. */
export async function eventually(fn: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface WatchEventLine {
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  object: any;
}

export interface WatchStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: WatchEventLine[];
  /** Resolves when the server ends the response. */
  ended: Promise<void>;
  /** Waits until at least `n` events arrived; returns them all. */
  waitForCount(n: number, ms?: number): Promise<WatchEventLine[]>;
  /** Waits for an event matching `pred`. */
  waitFor(pred: (e: WatchEventLine) => boolean, ms?: number): Promise<WatchEventLine>;
  close(): void;
  /** The underlying request (to pause reading). */
  res: http.IncomingMessage;
}

/** Opens a watch and collects its events. Resolves once headers arrived. */
export function openWatch(
  h: Pick<Harness, "url">,
  path: string,
  headers: Record<string, string> = {},
): Promise<WatchStream> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${h.url}${path}`, { method: "GET", headers }, (res) => {
      const events: WatchEventLine[] = [];
      let buf = "";
      let endResolve!: () => void;
      const ended = new Promise<void>((r) => {
        endResolve = r;
      });
      const waiters: (() => void)[] = [];
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) {
            try {
              events.push(JSON.parse(line));
            } catch {
              events.push({ type: "UNPARSEABLE", object: line });
            }
          }
          nl = buf.indexOf("\n");
        }
        for (const w of waiters.splice(0)) w();
      });
      res.on("end", () => {
        const line = buf.trim();
        if (line) {
          try {
            events.push(JSON.parse(line));
          } catch {
            events.push({ type: "UNPARSEABLE", object: line });
          }
        }
        endResolve();
        for (const w of waiters.splice(0)) w();
      });
      res.on("error", () => endResolve());
      res.on("close", () => endResolve());
      const waitUntil = async (ok: () => boolean, ms: number, what: string) => {
        const until = Date.now() + ms;
        while (!ok()) {
          if (Date.now() > until) {
            throw new Error(
              `watch: ${what} not seen in ${ms} ms; got ${JSON.stringify(events.map((e) => e.type))}`,
            );
          }
          await new Promise<void>((r) => {
            const t = setTimeout(r, 20);
            waiters.push(() => {
              clearTimeout(t);
              r();
            });
          });
        }
      };
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        ended,
        res,
        async waitForCount(n, ms = 5000) {
          await waitUntil(() => events.length >= n, ms, `${n} events`);
          return events;
        },
        async waitFor(pred, ms = 5000) {
          await waitUntil(() => events.some(pred), ms, "event");
          return events.find(pred)!;
        },
        close() {
          req.destroy();
          res.destroy();
        },
      });
    });
    req.on("error", reject);
    req.end();
  });
}
