/**
 * Helpers of the gateway tests: plain node HTTP backends on 127.x addresses
 * (answering with who they are and what they got, "/slow" after half a
 * second, echoing upgraded sockets),
 * the Service, EndpointSlice and Ingress objects that point at them, a gateway
 * in this process, and requests through it with a chosen Host header.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, request, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EndpointSlice, Ingress, Service } from "@setpoint/api";
import { type Client, type RestConfig, silentLogger } from "@setpoint/runtime";
import { Gateway, type GatewayOptions } from "../../src/gateway/index.ts";

export interface Backend {
  name: string;
  ip: string;
  port: number;
  server: Server;
  hits: number;
  /** Stops accepting and drops open connections (as a killed process would). */
  kill(): Promise<void>;
}

/** Starts an HTTP backend on `ip` (port chosen by the system) named `name`. */
export async function startBackend(name: string, ip: string, port = 0): Promise<Backend> {
  const sockets = new Set<Socket>();
  const b = { name, ip, hits: 0 } as Backend;
  const server = createServer((req, res) => {
    b.hits++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      // "/slow" answers after half a second (a request in flight for a while).
      if (req.url?.startsWith("/slow")) await new Promise((r) => setTimeout(r, 500));
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          backend: name,
          method: req.method,
          url: req.url,
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  server.on("upgrade", (req, socket, head) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\nX-Backend: ${name}\r\n\r\n`,
    );
    if (head.length) socket.write(head);
    socket.pipe(socket);
  });
  await new Promise<void>((r) => server.listen(port, ip, r));
  b.server = server;
  b.port = (server.address() as AddressInfo).port;
  b.kill = async () => {
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return b;
}

export async function createService(
  client: Client,
  ns: string,
  name: string,
  backends: Backend[],
  opts: { ready?: (b: Backend) => boolean } = {},
): Promise<void> {
  await client.create<Service>({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: ns },
    spec: { ports: [{ name: "http", port: 80, targetPort: "http" }] },
  });
  await putSlice(client, ns, name, backends, opts);
}

/** Creates or replaces the Service's one EndpointSlice (backends must share a port). */
export async function putSlice(
  client: Client,
  ns: string,
  svc: string,
  backends: Backend[],
  opts: { ready?: (b: Backend) => boolean } = {},
): Promise<void> {
  const slice: EndpointSlice = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${svc}-1`, namespace: ns, labels: { "kubernetes.io/service-name": svc } },
    addressType: "IPv4",
    ports: [{ name: "http", port: backends[0]?.port ?? 1, protocol: "TCP" }],
    endpoints: backends.map((b) => ({
      addresses: [b.ip],
      conditions: { ready: opts.ready ? opts.ready(b) : true },
    })),
  };
  const old = await client.get<EndpointSlice>(SLICE, `${svc}-1`, ns).catch(() => undefined);
  if (old)
    await client.update({
      ...slice,
      metadata: { ...slice.metadata, resourceVersion: old.metadata.resourceVersion },
    });
  else await client.create(slice);
}

const SLICE = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;

export type PathSpec = [
  path: string,
  type: "Exact" | "Prefix" | "ImplementationSpecific",
  svc: string,
];

export function ingressObject(
  ns: string,
  name: string,
  rules: { host?: string; paths: PathSpec[] }[],
  extra: { tls?: { hosts: string[]; secretName: string }[]; className?: string } = {},
): Ingress {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name, namespace: ns },
    spec: {
      ingressClassName: extra.className ?? "setpoint",
      rules: rules.map((r) => ({
        host: r.host,
        http: {
          paths: r.paths.map(([path, pathType, svc]) => ({
            path,
            pathType,
            backend: { service: { name: svc, port: { name: "http" } } },
          })),
        },
      })),
      ...(extra.tls ? { tls: extra.tls } : {}),
    },
  };
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json?: { backend: string; headers: IncomingHttpHeaders; body: string; url: string };
}

/** One request through the gateway at `addr` ("HOST:PORT") with a Host header. */
export function get(
  addr: string,
  host: string,
  path: string,
  opts: { method?: string; body?: string; timeoutMs?: number } = {},
): Promise<Reply> {
  const i = addr.lastIndexOf(":");
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: addr.slice(0, i),
        port: Number(addr.slice(i + 1)),
        path,
        method: opts.method ?? "GET",
        headers: { host },
        timeout: opts.timeoutMs ?? 5000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          body += d;
        });
        res.on("end", () => {
          let json: Reply["json"];
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** A temporary data directory, removed by the returned function. */
export function tempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-gateway-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A gateway in this process on 127.0.0.1 (ports chosen by the system), started. */
export async function startGateway(
  restConfig: RestConfig | undefined,
  dataDir: string,
  opts: Partial<GatewayOptions> = {},
): Promise<Gateway> {
  const gw = new Gateway({
    restConfig,
    listen: "127.0.0.1:0",
    adminListen: "127.0.0.1:0",
    dataDir,
    logger: silentLogger(),
    debounceMs: 10,
    ...opts,
  });
  await gw.start();
  return gw;
}
