/**
 * A minimal HTTP server that serves only what this layer derives from the
 * registry (version, discovery, OpenAPI v3) and records write requests, so real
 * kubectl can be pointed at the documents without the full apiserver.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import {
  aggregatedDiscovery,
  aggregatedDiscoveryContentType,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  negotiateAggregatedDiscovery,
  OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
  openapiV2Protobuf,
  openapiV3DocumentJson,
  openapiV3Hash,
  openapiV3Index,
} from "../../src/apiserver/discovery/index.ts";
import { negotiateTableVersion, toTable } from "../../src/apiserver/wire/index.ts";
import type { Registry } from "../../src/registry/index.ts";

export interface RecordedRequest {
  method: string;
  url: string;
  contentType: string;
  accept: string;
  body: Buffer;
}

export interface TypeServer {
  url: string;
  /** Writes (every method but GET). */
  requests: RecordedRequest[];
  /** GETs: path, Accept, and the Content-Type answered. */
  reads: { path: string; accept: string; contentType: string }[];
  /** Runs kubectl against the server with a throwaway HOME and kubeconfig. */
  kubectl(
    args: string[],
    timeoutMs?: number,
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

export interface TypeServerOptions {
  /** Minor version reported by /version (selects the kubectl build). */
  minor?: number;
  /** Objects listed by GET on a collection, by "<group>/<plural>" (Table when asked for). */
  lists?: Map<string, KubeObject[]>;
  /** Whether /openapi/v2 is served (default true). */
  openapiV2?: boolean;
  /** Answers a write: the object to return (status 201), after recording it. */
  onWrite?: (req: RecordedRequest) => unknown;
}

export async function startTypeServer(
  reg: Registry,
  opts: TypeServerOptions = {},
): Promise<TypeServer> {
  const minor = opts.minor ?? 32;
  const requests: RecordedRequest[] = [];
  const reads: { path: string; accept: string; contentType: string }[] = [];
  const registryLookup = (g: string, v: string, plural: string) => reg.lookup(g, v, plural);
  /** Objects written with POST, by their item path; GET answers from here. */
  const objects = new Map<string, unknown>();
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const url = new URL(req.url ?? "/", "http://x");
    const path = url.pathname.replace(/\/$/, "") || "/";
    const accept = req.headers.accept ?? "";
    const send = (code: number, value: unknown, contentType = "application/json") => {
      if (req.method === "GET") reads.push({ path: url.pathname, accept, contentType });
      res.writeHead(code, { "Content-Type": contentType });
      res.end(typeof value === "string" ? value : JSON.stringify(value));
    };
    const notFound = () =>
      send(404, {
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "NotFound",
        code: 404,
        message: "not found",
      });
    if (req.method !== "GET") {
      const rec: RecordedRequest = {
        method: req.method ?? "",
        url: req.url ?? "",
        contentType: req.headers["content-type"] ?? "",
        accept,
        body,
      };
      requests.push(rec);
      try {
        const existing = objects.get(path);
        const result = opts.onWrite?.(rec) ?? existing ?? {};
        const name = (result as { metadata?: { name?: string } } | null)?.metadata?.name;
        if (req.method === "POST" && name) objects.set(`${path}/${name}`, result);
        send(req.method === "POST" ? 201 : 200, result);
      } catch (err) {
        const status = (err as { status?: { code?: number } }).status;
        send(status?.code ?? 500, status ?? { message: String(err) });
      }
      return;
    }
    if (path === "/version") {
      return send(200, {
        major: "1",
        minor: String(minor),
        gitVersion: `v1.${minor}.0`,
        gitCommit: "0000000000000000000000000000000000000000",
        gitTreeState: "clean",
        buildDate: "2024-01-01T00:00:00Z",
        goVersion: "go1.22.0",
        compiler: "gc",
        platform: "linux/amd64",
      });
    }
    if (path === "/api" || path === "/apis") {
      const v = negotiateAggregatedDiscovery(accept);
      if (v)
        return send(
          200,
          aggregatedDiscovery(reg, path === "/api" ? "api" : "apis", v),
          aggregatedDiscoveryContentType(v),
        );
      return send(200, path === "/api" ? apiVersions() : apiGroupList(reg));
    }
    const parts = path.split("/").filter(Boolean);
    const listFor = (p: string[]) => {
      const [group, version, rest] =
        p[0] === "api"
          ? ["", p[1], p.slice(2)]
          : p[0] === "apis"
            ? [p[1], p[2], p.slice(3)]
            : ["", "", []];
      if (!version) return undefined;
      const namespaced = rest.length === 3 && rest[0] === "namespaces";
      const plural = namespaced ? rest[2] : rest.length === 1 ? rest[0] : undefined;
      if (!plural) return undefined;
      const found = registryLookup(group, version, plural);
      const items = opts.lists?.get(`${group}/${plural}`);
      if (!found || !items) return undefined;
      return { ...found, items, namespace: namespaced ? rest[1] : undefined };
    };
    if (parts[0] === "api" && parts.length === 2) {
      const doc = apiResourceList(reg, "", parts[1]);
      return doc ? send(200, doc) : notFound();
    }
    if (parts[0] === "apis" && parts.length === 2) {
      const doc = apiGroup(reg, parts[1]);
      return doc ? send(200, doc) : notFound();
    }
    if (parts[0] === "apis" && parts.length === 3) {
      const doc = apiResourceList(reg, parts[1], parts[2]);
      return doc ? send(200, doc) : notFound();
    }
    const listed = listFor(parts);
    if (listed) {
      const { def, version, items, namespace } = listed;
      const selected = namespace ? items.filter((o) => o.metadata.namespace === namespace) : items;
      const tableVersion = negotiateTableVersion(accept);
      if (tableVersion) {
        const include = url.searchParams.get("includeObject") ?? "Metadata";
        return send(
          200,
          toTable(def, version, selected, {
            includeObject: include as "None" | "Metadata" | "Object",
            listMeta: { resourceVersion: "10" },
            tableVersion,
          }),
          `application/json;as=Table;v=${tableVersion};g=meta.k8s.io`,
        );
      }
      return send(200, {
        kind: def.names.listKind,
        apiVersion: version.name,
        metadata: { resourceVersion: "10" },
        items: selected,
      });
    }
    const stored = objects.get(path);
    if (stored) return send(200, stored);
    if (path === "/openapi/v3") return send(200, openapiV3Index(reg));
    if (path === "/openapi/v2" || path === "/swagger-2.0.0.pb-v1") {
      if (opts.openapiV2 === false) return notFound();
      res.writeHead(200, { "Content-Type": OPENAPI_V2_PROTOBUF_CONTENT_TYPE });
      return res.end(openapiV2Protobuf());
    }
    if (parts[0] === "openapi" && parts[1] === "v3") {
      const gv = parts[2] === "api" ? { g: "", v: parts[3] } : { g: parts[3], v: parts[4] };
      const json = openapiV3DocumentJson(reg, gv.g, gv.v);
      if (!json) return notFound();
      res.setHeader("ETag", `"${openapiV3Hash(reg, gv.g, gv.v)}"`);
      return send(200, json);
    }
    notFound();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const home = mkdtempSync(join(tmpdir(), "setpoint-kubectl-"));
  const kubeconfig = join(home, "kubeconfig");
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: t
  cluster:
    server: ${url}
contexts:
- name: t
  context:
    cluster: t
    user: u
    namespace: default
current-context: t
users:
- name: u
  user: {}
`,
  );
  const kubectl = (args: string[], timeoutMs = 20_000) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn("kubectl", args, {
        env: { ...process.env, HOME: home, KUBECONFIG: kubeconfig },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  return {
    url,
    requests,
    reads,
    kubectl,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(home, { recursive: true, force: true });
    },
  };
}
