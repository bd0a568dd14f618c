/**
 * Fuzzing the REST handler: random and mutated requests (paths, methods, bodies,
 * headers, query parameters) against a running handler on a real SQLite file.
 * Every answer must be well-formed (a full Status for errors, never a 500), and in
 * the end the store must hold exactly what the successful writes produced.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { decodeProtobufResponse, isProtobufContentType } from "../../src/apiserver/wire/index.ts";
import { addWidgetType, type Harness, startHarness } from "./harness.ts";

/** Requests per run (each run is seeded; the seed is printed on failure). */
const REQUESTS = 1500;
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick<T>(xs: readonly T[]): T {
      return xs[Math.floor(next() * xs.length)];
    },
    chance: (p: number) => next() < p,
  };
}
type Rng = ReturnType<typeof prng>;

interface Target {
  base: (ns: string) => string;
  namespaced: boolean;
  body: (name: string, ns: string) => Record<string, unknown>;
}

const TARGETS: Target[] = [
  {
    base: (ns) => `/api/v1/namespaces/${ns}/configmaps`,
    namespaced: true,
    body: (name) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" } }),
  },
  {
    base: (ns) => `/api/v1/namespaces/${ns}/secrets`,
    namespaced: true,
    body: (name) => ({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name },
      type: "Opaque",
      data: { k: "dmFsdWU=" },
    }),
  },
  {
    base: (ns) => `/apis/example.com/v1/namespaces/${ns}/widgets`,
    namespaced: true,
    body: (name) => ({
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name },
      spec: { replicas: 1, items: [{ name: "a" }] },
    }),
  },
  {
    base: (ns) => `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`,
    namespaced: true,
    body: (name) => ({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name },
      spec: { holderIdentity: "me", leaseDurationSeconds: 10 },
    }),
  },
  {
    base: () => "/api/v1/namespaces",
    namespaced: false,
    body: (name) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } }),
  },
];

const NAMES = ["a", "b", "c", "web-1", "x.y", "Bad_Name", "", "-x", "z".repeat(300)];
const NAMESPACES = ["fz", "fz", "fz2", "missing", "Bad NS"];
const WEIRD_VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  "",
  "x",
  "é✓\u0000",
  [],
  [1, "a", null],
  {},
  { nested: { deeper: [{}] } },
  "x".repeat(5000),
  JSON.parse('{"__proto__": {"polluted": true}}'),
];
const CONTENT_TYPES = [
  "application/json",
  "application/json",
  "application/yaml",
  "application/vnd.kubernetes.protobuf",
  "application/merge-patch+json",
  "application/json-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
  "text/plain",
  "",
  "application/json; charset=utf-8",
  "garbage/;;;",
];
const ACCEPTS = [
  undefined,
  "application/json",
  "application/yaml",
  "application/json;as=Table;v=v1;g=meta.k8s.io",
  "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
  "application/vnd.kubernetes.protobuf",
  "*/*",
  "text/html;q=0",
  ";;;,,",
];

const WRITE_ACCEPTS = [
  undefined,
  "application/json",
  "*/*",
  "application/yaml",
  "application/vnd.kubernetes.protobuf",
  "text/html;q=0",
];

function randomValue(r: Rng): unknown {
  // A fresh copy each time (JSON.parse keeps "__proto__" as an own key).
  return JSON.parse(JSON.stringify(r.pick(WEIRD_VALUES)));
}

function paths(obj: unknown, prefix: string[] = [], out: string[][] = []): string[][] {
  if (obj && typeof obj === "object") {
    for (const k of Object.keys(obj)) {
      const p = [...prefix, k];
      out.push(p);
      paths((obj as Record<string, unknown>)[k], p, out);
    }
  }
  return out;
}

function metaOf(o: Record<string, unknown>): Record<string, unknown> {
  const m = o.metadata;
  if (typeof m === "object" && m !== null && !Array.isArray(m)) return m as Record<string, unknown>;
  const fresh: Record<string, unknown> = {};
  o.metadata = fresh;
  return fresh;
}

function mutateObject(r: Rng, obj: Record<string, unknown>): unknown {
  const o = structuredClone(obj);
  const n = r.int(4);
  for (let i = 0; i < n; i++) {
    const all = paths(o);
    const choice = r.int(7);
    if (choice === 0 && all.length > 0) {
      const p = r.pick(all);
      let cur: Record<string, unknown> = o;
      for (const k of p.slice(0, -1)) cur = cur[k] as Record<string, unknown>;
      delete cur[p[p.length - 1]];
    } else if (choice === 1 && all.length > 0) {
      const p = r.pick(all);
      let cur: Record<string, unknown> = o;
      for (const k of p.slice(0, -1)) cur = cur[k] as Record<string, unknown>;
      cur[p[p.length - 1]] = randomValue(r);
    } else if (choice === 2) {
      o[r.pick(["spec", "status", "extra", "metadata", "data"])] = randomValue(r);
    } else if (choice === 3) {
      const meta = metaOf(o);
      meta[
        r.pick([
          "labels",
          "annotations",
          "finalizers",
          "namespace",
          "uid",
          "resourceVersion",
          "generateName",
          "ownerReferences",
          "deletionTimestamp",
        ])
      ] = r.pick([
        { a: "b" },
        { "bad key!": "v" },
        ["example.com/f"],
        "fz",
        "other",
        "123",
        "gen-",
        [{ apiVersion: "v1", kind: "X", name: "n", uid: "u" }],
        "2020-01-01T00:00:00Z",
        randomValue(r),
      ]);
    } else if (choice === 4) {
      o.apiVersion = r.pick(["v1", "apps/v1", "example.com/v1", "", 5]);
    } else if (choice === 5) {
      o.kind = r.pick(["ConfigMap", "Secret", "Widget", "Namespace", "Nope", ""]);
    } else {
      metaOf(o).name = r.pick(NAMES);
    }
  }
  return o;
}

function encodeBody(r: Rng, value: unknown): string | Buffer {
  let text = JSON.stringify(value) ?? "null";
  const choice = r.int(10);
  if (choice === 0) text = text.slice(0, r.int(text.length + 1));
  else if (choice === 1) {
    // Duplicate a key.
    text = text.replace(/^\{/, '{"metadata":{"name":"dup"},');
  } else if (choice === 2) {
    const b = Buffer.from(text);
    if (b.length > 0) b[r.int(b.length)] = r.int(256);
    return b;
  } else if (choice === 3) {
    return Buffer.from(Array.from({ length: r.int(64) }, () => r.int(256)));
  } else if (choice === 4) {
    text = "[".repeat(2000) + "]".repeat(2000);
  } else if (choice === 5) {
    text = "a: &a [x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b, *b]\n";
  }
  return text;
}

function patchBody(r: Rng, base: Record<string, unknown>): unknown {
  return r.pick([
    { data: { k: r.pick(["v2", null, 1]) } },
    { metadata: { labels: { l: r.pick(["x", "bad value!", null]) } } },
    { metadata: { finalizers: r.pick([[], ["example.com/f"], null]) } },
    [{ op: "replace", path: "/data/k", value: "p" }],
    [{ op: "test", path: "/metadata/name", value: "zzz" }],
    [
      {
        op: r.pick(["add", "remove", "move", "copy", "bogus"]),
        path: r.pick(["/spec", "/metadata/labels/x", "/", "", "~2"]),
        from: "/data",
        value: 1,
      },
    ],
    { spec: { replicas: r.pick([2, -5, "x"]), items: [{ name: "b" }] } },
    { status: { ready: r.pick([true, "yes"]) } },
    base,
    mutateObject(r, base),
    { metadata: { resourceVersion: r.pick(["1", "999999", "abc"]) } },
  ]);
}

function randomQuery(r: Rng): string {
  const q = new URLSearchParams();
  const opts: [string, () => string][] = [
    ["dryRun", () => r.pick(["All", "None", ""])],
    ["fieldValidation", () => r.pick(["Strict", "Warn", "Ignore", "Bogus"])],
    ["fieldManager", () => r.pick(["fuzz", "other", "", "x".repeat(200), "\u0001"])],
    ["force", () => r.pick(["true", "false", "maybe"])],
    ["resourceVersion", () => r.pick(["0", "1", "", "abc", "99999999"])],
    ["resourceVersionMatch", () => r.pick(["Exact", "NotOlderThan", "x"])],
    ["limit", () => r.pick(["1", "2", "-1", "x"])],
    ["continue", () => r.pick(["abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ6In0"])],
    ["labelSelector", () => r.pick(["a=b", "a in (b", "!a", "x==y,z", "a notin ()"])],
    ["fieldSelector", () => r.pick(["metadata.name=a", "spec.x=1", "=", "metadata.namespace!=fz"])],
    ["propagationPolicy", () => r.pick(["Orphan", "Background", "Foreground", "Nope"])],
    ["gracePeriodSeconds", () => r.pick(["0", "30", "-1", "x"])],
    ["includeObject", () => r.pick(["None", "Object", "Metadata", "Bad"])],
  ];
  for (const [k, v] of opts) if (r.chance(0.12)) q.append(k, v());
  const s = q.toString();
  return s ? `?${s}` : "";
}

function mutatePath(r: Rng, path: string): string {
  switch (r.int(12)) {
    case 0:
      return `${path}/extra/segments/here`;
    case 1:
      return path.replace(/\/[^/]+$/, "/%zz");
    case 2:
      return path.replace("/api/", "/api//");
    case 3:
      return `${path}/status`;
    case 4:
      return `${path}/finalize`;
    case 5:
      return path.replace("v1", r.pick(["v2", "v1beta1", ""]));
    case 6:
      return `/apis/${r.pick(["", "nope.io", "example.com"])}/${r.pick(["v1", "x"])}`;
    case 7:
      return r.pick([
        "/api",
        "/apis",
        "/openapi/v3",
        "/openapi/v2",
        "/openapi/v3/api/v1?hash=x",
        "/api/v1/watch/namespaces/fz/configmaps?timeoutSeconds=1",
      ]);
    default:
      return path;
  }
}

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  // biome-ignore lint/suspicious/noExplicitAny: fuzz bodies are read freely
  body: any;
  text: string;
  aborted: boolean;
}

function send(url: string, req: Sent): Promise<Got> {
  return new Promise((resolve) => {
    const headers = { ...req.headers };
    if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
    const r = http.request(`${url}${req.path}`, { method: req.method, headers }, (res) => {
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => {
        // A watch (or a stream) that stays open: stop reading it.
        r.destroy();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: undefined,
          text: "",
          aborted: true,
        });
      }, 400);
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        clearTimeout(timer);
        const raw = Buffer.concat(chunks);
        const text = raw.toString("utf8");
        let body: unknown;
        try {
          const type = String(res.headers["content-type"] ?? "");
          // Objects and error Statuses come in protobuf to a client that asked for it.
          if (isProtobufContentType(type))
            body = raw.length ? decodeProtobufResponse(raw) : undefined;
          else if (type.startsWith("application/yaml")) body = text ? parseYaml(text) : undefined;
          else body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text, aborted: false });
      });
      res.on("error", () => undefined);
    });
    r.on("error", () =>
      resolve({ status: 0, headers: {}, body: undefined, text: "", aborted: true }),
    );
    r.end(req.body);
  });
}

const VALID_NAMES = ["a", "b", "c", "web-1", "x.y"];

/** A request that is meant to succeed (mostly), so that the store sees real traffic. */
function makeValidRequest(r: Rng, model: Map<string, Obj>): Sent {
  const target = r.pick(TARGETS.slice(0, 4));
  const ns = r.pick(["fz", "fz2"]);
  const name = r.pick(VALID_NAMES);
  const base = target.base(ns);
  const method = r.pick([
    "POST",
    "POST",
    "PUT",
    "PUT",
    "PATCH",
    "PATCH",
    "PATCH",
    "DELETE",
    "DELETE",
    "GET",
  ]);
  const headers: Record<string, string> = { accept: "application/json" };
  const valid = target.body(name, ns);
  const kind = valid.kind as string;
  const current = model.get(`${kind}/${ns}/${name}`);
  const q = new URLSearchParams();
  if (r.chance(0.1)) q.set("dryRun", "All");
  if (r.chance(0.2)) q.set("fieldValidation", r.pick(["Strict", "Warn", "Ignore"]));
  if (r.chance(0.3)) q.set("fieldManager", r.pick(["m1", "m2"]));
  const meta = valid.metadata as Record<string, unknown>;
  if (r.chance(0.2)) meta.finalizers = ["example.com/hold"];
  if (r.chance(0.3)) meta.labels = { team: r.pick(["a", "b"]) };
  let path = `${base}/${name}`;
  let body: string | undefined;
  switch (method) {
    case "POST":
      path = base;
      body = JSON.stringify(valid);
      headers["content-type"] = "application/json";
      break;
    case "PUT":
      if (current && r.chance(0.8)) meta.resourceVersion = current.metadata.resourceVersion;
      if (current && r.chance(0.5)) {
        meta.finalizers = current.metadata.finalizers;
        if (r.chance(0.3)) meta.finalizers = [];
      }
      if (r.chance(0.1)) path += "/status";
      body = JSON.stringify(valid);
      headers["content-type"] = "application/json";
      break;
    case "PATCH": {
      const type = r.pick(["merge", "json", "strategic", "apply"]);
      if (type === "apply") {
        headers["content-type"] = "application/apply-patch+yaml";
        q.set("fieldManager", r.pick(["m1", "m2"]));
        if (r.chance(0.3)) q.set("force", "true");
        body = JSON.stringify(valid);
      } else if (type === "json") {
        headers["content-type"] = "application/json-patch+json";
        body = JSON.stringify([
          r.pick([
            { op: "add", path: "/metadata/labels", value: { p: "1" } },
            { op: "replace", path: "/metadata/finalizers", value: [] },
            { op: "remove", path: "/metadata/finalizers" },
            { op: "add", path: "/metadata/annotations", value: { n: String(r.int(9)) } },
          ]),
        ]);
      } else {
        headers["content-type"] =
          type === "merge"
            ? "application/merge-patch+json"
            : "application/strategic-merge-patch+json";
        body = JSON.stringify(
          r.pick([
            { metadata: { labels: { p: String(r.int(5)) } } },
            { metadata: { finalizers: null } },
            { metadata: { annotations: { n: String(r.int(9)) } } },
            { data: { k: String(r.int(9)) } },
            { spec: { replicas: r.int(4) } },
          ]),
        );
      }
      break;
    }
    case "DELETE":
      if (r.chance(0.15)) path = `${base}?labelSelector=team%3D${r.pick(["a", "b"])}`;
      if (r.chance(0.4)) {
        body = JSON.stringify({
          kind: "DeleteOptions",
          apiVersion: "v1",
          propagationPolicy: r.pick(["Orphan", "Foreground", "Background"]),
        });
        headers["content-type"] = "application/json";
      }
      break;
    default:
      break;
  }
  const qs = q.toString();
  if (qs) path += `${path.includes("?") ? "&" : "?"}${qs}`;
  return { method, path, headers, ...(body !== undefined ? { body } : {}) };
}

function makeRequest(r: Rng): { sent: Sent; target: Target | null } {
  const target = r.pick(TARGETS);
  const ns = r.pick(NAMESPACES);
  const name = r.pick(NAMES);
  const base = target.base(ns);
  const method = r.pick([
    "GET",
    "GET",
    "POST",
    "POST",
    "PUT",
    "PUT",
    "PATCH",
    "PATCH",
    "DELETE",
    "DELETE",
    "HEAD",
    "OPTIONS",
    "FOO",
  ]);
  const named = method !== "POST" ? r.chance(0.8) : r.chance(0.1);
  let path = named ? `${base}/${encodeURIComponent(name)}` : base;
  if (r.chance(0.2)) path = mutatePath(r, path);
  path += path.includes("?") ? "" : randomQuery(r);
  const headers: Record<string, string> = {};
  // Writes answer in JSON or YAML here (or 406), so that the model can read them.
  const accept = r.pick(method === "GET" ? ACCEPTS : WRITE_ACCEPTS);
  if (accept !== undefined) headers.accept = accept;
  let body: string | Buffer | undefined;
  const valid = target.body(name, ns);
  if (method === "POST" || method === "PUT") {
    const obj = r.chance(0.5) ? valid : mutateObject(r, valid);
    body = r.chance(0.7) ? JSON.stringify(obj) : encodeBody(r, obj);
    headers["content-type"] = r.chance(0.8) ? "application/json" : r.pick(CONTENT_TYPES);
  } else if (method === "PATCH") {
    const p = patchBody(r, valid);
    body = r.chance(0.8) ? JSON.stringify(p) : encodeBody(r, p);
    headers["content-type"] = r.pick(CONTENT_TYPES.slice(4, 8).concat(CONTENT_TYPES));
  } else if (method === "DELETE" && r.chance(0.3)) {
    body = JSON.stringify(
      r.pick([
        {
          kind: "DeleteOptions",
          apiVersion: "v1",
          propagationPolicy: r.pick(["Orphan", "Foreground", "Background", "X"]),
        },
        { preconditions: { uid: "nope" } },
        { dryRun: ["All"] },
        { gracePeriodSeconds: "x" },
        [],
        "x",
      ]),
    );
    headers["content-type"] = "application/json";
  }
  return { sent: { method, path, headers, ...(body !== undefined ? { body } : {}) }, target };
}

/** Whether the server treats a successful request as a dry run. */
function isDryRun(sent: Sent): boolean {
  const q = new URL(sent.path, "http://x").searchParams;
  if (sent.method === "DELETE" && sent.body !== undefined && Buffer.byteLength(sent.body) > 0) {
    try {
      const b = JSON.parse(sent.body.toString());
      return Array.isArray(b?.dryRun) ? b.dryRun.includes("All") : b?.dryRun === "All";
    } catch {
      return false;
    }
  }
  return q.getAll("dryRun").some((v) => v === "All");
}

type Obj = {
  kind?: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string };
} & Record<string, unknown>;

function keyOf(obj: Obj): string {
  return `${obj.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
}

/** Whether an object a write answered with is still stored (deletes: only when finalizers hold it). */
function lingers(obj: Obj, deleting: boolean): boolean {
  if (!obj.metadata.deletionTimestamp) return !deleting;
  const fin = (obj.metadata.finalizers as string[] | undefined) ?? [];
  const specFin = (obj.spec as { finalizers?: string[] } | undefined)?.finalizers ?? [];
  return fin.length > 0 || (obj.kind === "Namespace" && specFin.length > 0);
}

function objectPath(obj: Obj): string {
  const t = TARGETS.find((x) => (x.body("n", "ns") as { kind: string }).kind === obj.kind)!;
  const base = t.base(obj.metadata.namespace ?? "");
  return `${base}/${obj.metadata.name}`;
}

const KIND_BY_PLURAL: Record<string, string> = {
  configmaps: "ConfigMap",
  secrets: "Secret",
  widgets: "Widget",
  leases: "Lease",
  namespaces: "Namespace",
};

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ registry: addWidgetType });
  await h.namespace("fz");
  await h.namespace("fz2");
});
afterAll(async () => {
  await h.close();
});

describe("fuzz", () => {
  it(`survives ${REQUESTS} random requests and stores exactly what succeeded (seed ${SEED})`, async () => {
    const r = prng(SEED);
    const model = new Map<string, Obj>();
    for (const ns of ["fz", "fz2"]) {
      const got = await h.get(`/api/v1/namespaces/${ns}`);
      model.set(keyOf(got.body), got.body);
    }
    const problems: string[] = [];
    /**
     * A deletion answered with an object: the object was removed, or only marked
     * (finalizers). A removed object is answered as it was last stored, which may
     * show finalizers the deletion's propagation policy then dropped, so when the
     * answer does not tell, ask.
     */
    const settleDeleted = async (obj: Obj) => {
      const known = model.get(keyOf(obj));
      const marked =
        lingers(obj, true) &&
        (known === undefined || known.metadata.resourceVersion !== obj.metadata.resourceVersion);
      if (marked) {
        model.set(keyOf(obj), obj);
        return;
      }
      if (!lingers(obj, true)) {
        model.delete(keyOf(obj));
        return;
      }
      const path = objectPath(obj);
      const now = await send(h.url, { method: "GET", path, headers: {} });
      if (now.status === 404) model.delete(keyOf(obj));
      else model.set(keyOf(obj), now.body);
    };
    const history: string[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      const sent = r.chance(0.5) ? makeValidRequest(r, model) : makeRequest(r).sent;
      const got = await send(h.url, sent);
      const where = `#${i} ${sent.method} ${sent.path}`;
      history.push(
        `${where} ${sent.headers["content-type"] ?? ""} ${typeof sent.body === "string" ? sent.body.slice(0, 150) : ""} -> ${got.status} ${got.text.slice(0, 150)}`,
      );
      if (got.status === 0) {
        problems.push(`${where}: no response`);
        continue;
      }
      if (got.status >= 500 && got.status !== 503 && got.status !== 504) {
        problems.push(`${where}: ${got.status} ${got.text.slice(0, 300)}`);
      }
      const isApi = /^\/(api|apis)(\/|$|\?)/.test(sent.path);
      // Node's HTTP parser refuses some requests (unknown methods, spaces in the path)
      // before any handler runs: an empty 400 without a content type.
      const refusedByHttp = got.status === 400 && got.text === "" && !got.headers["content-type"];
      if (got.status >= 400 && isApi && sent.method !== "HEAD" && !got.aborted && !refusedByHttp) {
        const b = got.body;
        if (
          b?.kind !== "Status" ||
          b.apiVersion !== "v1" ||
          b.status !== "Failure" ||
          typeof b.message !== "string" ||
          typeof b.reason !== "string" ||
          b.code !== got.status ||
          typeof b.details !== "object"
        ) {
          problems.push(`${where}: ${got.status} without a full Status: ${got.text.slice(0, 200)}`);
        }
      }
      if (got.status < 200 || got.status > 299 || got.aborted) continue;
      if (!["POST", "PUT", "PATCH", "DELETE"].includes(sent.method) || isDryRun(sent)) continue;
      const b = got.body;
      if (!b) continue;
      if (b.kind === "Status") {
        const plural = b.details?.kind as string;
        const kind = KIND_BY_PLURAL[plural];
        const m = /\/namespaces\/([^/]+)\//.exec(sent.path);
        const ns = kind === "Namespace" ? "" : (m?.[1] ?? "");
        model.delete(`${kind}/${ns}/${b.details?.name}`);
      } else if (b.kind?.endsWith("List")) {
        for (const item of (b.items ?? []) as Obj[]) {
          await settleDeleted({ ...item, kind: b.kind.slice(0, -4) } as Obj);
        }
      } else if (b.metadata?.name) {
        const obj = b as Obj;
        if (sent.method === "DELETE") await settleDeleted(obj);
        else if (lingers(obj, false)) model.set(keyOf(obj), obj);
        else model.delete(keyOf(obj));
      }
    }
    if (process.env.FUZZ_DEBUG) {
      const byStatus = new Map<string, number>();
      for (const l of history) {
        const m = / -> (\d+)/.exec(l);
        const k = `${l.split(" ")[1]} ${m?.[1]}`;
        byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
      }
      console.log(
        [...byStatus.entries()]
          .sort()
          .map(([k, v]) => `${k}: ${v}`)
          .join("\n"),
      );
    }
    expect(problems.slice(0, 10), `seed ${SEED}`).toEqual([]);

    // The store holds exactly the model.
    const stored = new Map<string, Obj>();
    const listing = await h.store.list("/registry/");
    for (const kv of listing.items) {
      const obj = JSON.parse(kv.value) as Obj;
      obj.metadata.resourceVersion = String(kv.modRevision);
      stored.set(keyOf(obj), obj);
    }
    const diff = [...model.keys()]
      .filter((k) => !stored.has(k))
      .concat([...stored.keys()].filter((k) => !model.has(k)));
    if (diff.length > 0 && process.env.FUZZ_DEBUG) {
      console.log("DIFF", diff.join(" "));
      for (const k of diff) {
        const [kind, ns, name] = k.split("/");
        const plural = Object.entries(KIND_BY_PLURAL).find(([, v]) => v === kind)?.[0] ?? "";
        console.log(
          k,
          history
            .filter(
              (l) =>
                l.includes(`/${plural}`) &&
                (l.includes(`/${ns}/`) || kind === "Namespace") &&
                (l.includes(name) || / (DELETE|POST|PATCH|PUT) /.test(l)) &&
                / -> 2/.test(l),
            )
            .join("\n"),
        );
      }
    }
    expect([...stored.keys()].sort(), `seed ${SEED}`).toEqual([...model.keys()].sort());
    for (const [k, obj] of model) {
      expect(stored.get(k), `seed ${SEED}: ${k}`).toEqual(obj);
    }
  }, 120_000);
});
