/**
 * The gateway process: listeners (HTTP, optional HTTPS by SNI, an admin port
 * with /readyz, /healthz and /metrics), the proxy, and the sync loop that
 * follows Ingresses, IngressClasses, Services, EndpointSlices and TLS Secrets
 * through informers, rebuilds the table, swaps it in, saves it and writes the
 * Ingresses' status.loadBalancer.
 *
 * Start order is what makes it statically stable: the table on disk is loaded
 * and served first; the listeners open; only then does the sync start, in the
 * background, and a table is rebuilt from the API only once every informer has
 * listed (a partial cache never replaces a good table). Ready means "has a
 * table", whether or not the apiserver answers.
 */
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, Server as NetServer } from "node:net";
import { createSecureContext, type SecureContext } from "node:tls";
import type { EndpointSlice, Ingress, IngressClass, KubeObject, Service } from "@setpoint/api";
import { Client, Informer, kind, type Logger, type RestConfig } from "@setpoint/runtime";
import { createGatewayMetrics, type GatewayMetrics } from "./metrics.ts";
import { ReverseProxy } from "./proxy.ts";
import { loadTable, saveTable } from "./store.ts";
import { buildTable, CompiledTable, type RouteTable, sameRoutes } from "./table.ts";

export const DEFAULT_INGRESS_CLASS = "setpoint";
export const GATEWAY_CONTROLLER_NAME = "setpoint.dev/gateway";

export interface GatewayOptions {
  /** The API server; unset runs from the table on disk only. */
  restConfig?: RestConfig | undefined;
  /** HTTP listener "HOST:PORT" (port 0 picks one). */
  listen: string;
  /** HTTPS listener "HOST:PORT", certificates by SNI from the Ingresses' TLS Secrets. */
  tlsListen?: string | undefined;
  /** Admin listener "HOST:PORT" for /readyz, /healthz, /metrics. */
  adminListen?: string | undefined;
  dataDir: string;
  ingressClass?: string | undefined;
  /** The address written to status.loadBalancer (default: the listen host, 127.0.0.1 for a wildcard). */
  publishAddress?: string | undefined;
  logger: Logger;
  /** Wait after a change before rebuilding, ms (default 50). */
  debounceMs?: number | undefined;
  /** How often the table's age is refreshed while the API is watched, ms (default 10 s). */
  confirmMs?: number | undefined;
  ejectMs?: number | undefined;
  accessLog?: boolean | undefined;
}

export function splitHostPort(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(":");
  if (i < 0) throw new Error(`address ${JSON.stringify(addr)} is not HOST:PORT`);
  const host = addr.slice(0, i).replace(/^\[|\]$/g, "") || "0.0.0.0";
  const port = Number(addr.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`address ${JSON.stringify(addr)} has no valid port`);
  }
  return { host, port };
}

const KINDS = {
  ingress: kind<Ingress>("networking.k8s.io/v1", "Ingress"),
  ingressClass: kind<IngressClass>("networking.k8s.io/v1", "IngressClass"),
  service: kind<Service>("v1", "Service"),
  slice: kind<EndpointSlice>("discovery.k8s.io/v1", "EndpointSlice"),
  secret: kind<KubeObject>("v1", "Secret"),
};

export class Gateway {
  readonly metrics: GatewayMetrics;
  readonly proxy: ReverseProxy;
  private readonly log: Logger;
  private readonly className: string;
  private current: RouteTable | undefined;
  private client: Client | undefined;
  private informers: Informer<KubeObject>[] = [];
  private servers: Server[] = [];
  private admin: Server | undefined;
  private readonly stopSync = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private confirmTimer: NodeJS.Timeout | undefined;
  private savedAt = 0;
  private contexts = new Map<string, SecureContext>();
  private statusWritten = new Map<string, string>();
  /** Bound addresses, after start(). */
  address = "";
  tlsAddress = "";
  adminAddress = "";

  constructor(private readonly opts: GatewayOptions) {
    this.log = opts.logger;
    this.className = opts.ingressClass ?? DEFAULT_INGRESS_CLASS;
    this.metrics = createGatewayMetrics(() => this.tableAgeSeconds());
    this.proxy = new ReverseProxy({
      logger: opts.logger,
      metrics: this.metrics,
      ejectMs: opts.ejectMs,
      accessLog: opts.accessLog,
    });
  }

  /** Whether the gateway has a table to route with. */
  get ready(): boolean {
    return this.current !== undefined;
  }

  get table(): RouteTable | undefined {
    return this.current;
  }

  tableAgeSeconds(): number | undefined {
    if (!this.current) return undefined;
    return Math.max(0, (Date.now() - Date.parse(this.current.syncedAt)) / 1000);
  }

  /** Loads the saved table, opens the listeners, and starts following the API in the background. */
  async start(): Promise<void> {
    try {
      const saved = loadTable(this.opts.dataDir);
      if (saved) {
        this.swap(saved);
        this.log.info(
          { routes: saved.routes.length, ageSeconds: Math.round(this.tableAgeSeconds() ?? 0) },
          "serving the route table saved on disk",
        );
      } else this.log.info({ dataDir: this.opts.dataDir }, "no saved route table");
    } catch (err) {
      this.log.error(
        { err: (err as Error).message },
        "the saved route table is unreadable; ignoring it",
      );
    }
    const http = createHttpServer({ keepAliveTimeout: 65_000 }, (req, res) =>
      this.proxy.handle(req, res, false),
    );
    http.on("upgrade", (req, sock, head) => this.proxy.upgrade(req, sock, head, false));
    this.address = await listen(http, this.opts.listen);
    this.servers.push(http);
    if (this.opts.tlsListen) {
      const https = createHttpsServer(
        { SNICallback: (name, cb) => cb(null, this.contextFor(name)) },
        (req, res) => this.proxy.handle(req, res, true),
      );
      https.on("upgrade", (req, sock, head) => this.proxy.upgrade(req, sock, head, true));
      this.tlsAddress = await listen(https, this.opts.tlsListen);
      this.servers.push(https);
    }
    if (this.opts.adminListen) {
      this.admin = createHttpServer((req, res) => void this.serveAdmin(req.url ?? "/", res));
      this.adminAddress = await listen(this.admin, this.opts.adminListen);
    }
    if (this.opts.restConfig) this.startSync(this.opts.restConfig);
    this.confirmTimer = setInterval(() => this.confirm(), this.opts.confirmMs ?? 10_000);
    this.confirmTimer.unref();
  }

  private async serveAdmin(url: string, res: import("node:http").ServerResponse): Promise<void> {
    const path = url.split("?", 1)[0];
    if (path === "/healthz" || path === "/livez") {
      res.end("ok\n");
    } else if (path === "/readyz") {
      const age = this.tableAgeSeconds();
      res.writeHead(this.ready ? 200 : 503, { "content-type": "text/plain" });
      res.end(
        this.ready
          ? `ok: ${this.current?.routes.length} routes, table age ${Math.round(age ?? 0)}s\n`
          : "no route table yet\n",
      );
    } else if (path === "/metrics") {
      const body = await this.metrics.registry.metrics();
      res.writeHead(200, { "content-type": this.metrics.registry.contentType });
      res.end(body);
    } else {
      res.writeHead(404);
      res.end();
    }
  }

  private contextFor(name: string): SecureContext | undefined {
    const entry = this.proxy.table?.tlsFor(name) ?? this.current?.tls[0];
    if (!entry) return undefined;
    const key = `${entry.secret}\n${entry.cert}`;
    let ctx = this.contexts.get(key);
    if (!ctx) {
      try {
        ctx = createSecureContext({ cert: entry.cert, key: entry.key });
      } catch (err) {
        this.log.warn({ secret: entry.secret, err: (err as Error).message }, "bad TLS material");
        return undefined;
      }
      this.contexts.set(key, ctx);
    }
    return ctx;
  }

  /** Makes `table` the one requests are routed with, in one step. */
  private swap(table: RouteTable): void {
    this.current = table;
    this.proxy.table = new CompiledTable(table);
    this.contexts.clear();
    this.metrics.routes.set(table.routes.length);
    this.metrics.tableUpdates.inc();
  }

  private startSync(config: RestConfig): void {
    this.client = new Client({ ...config, userAgent: config.userAgent ?? "setpoint-gateway" });
    const logger = this.log.child({ component: "gateway-sync" });
    const mk = (type: (typeof KINDS)[keyof typeof KINDS], fieldSelector?: string) => {
      const inf = new Informer<KubeObject>(this.client as Client, type, {
        fieldSelector,
        logger,
        backoffMaxMs: 5000,
      });
      inf.addEventHandler({
        onAdd: () => this.schedule(),
        onUpdate: (_o, _n, resync) => {
          if (!resync) this.schedule();
        },
        onDelete: () => this.schedule(),
      });
      return inf;
    };
    this.informers = [
      mk(KINDS.ingress),
      mk(KINDS.ingressClass),
      mk(KINDS.service),
      mk(KINDS.slice),
      mk(KINDS.secret, "type=kubernetes.io/tls"),
    ];
    for (const inf of this.informers) inf.start(this.stopSync.signal);
    // Objects listed before the last informer synced gave no rebuild: build once all have.
    Promise.all(this.informers.map((i) => i.waitForSync(this.stopSync.signal))).then(
      () => {
        this.log.info("synced with the API");
        this.schedule();
      },
      () => {},
    );
  }

  private synced(): boolean {
    return this.informers.length > 0 && this.informers.every((i) => i.hasSynced());
  }

  private schedule(): void {
    if (this.timer || !this.synced()) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.rebuild();
    }, this.opts.debounceMs ?? 50);
  }

  /**
   * While every informer watches, the table is current: refresh its age (saved at
   * most every 30 s). Otherwise say how old it is.
   */
  private confirm(): void {
    if (!this.current) {
      this.log.info("no route table yet");
      return;
    }
    if (!this.synced() || !this.informers.every((i) => i.health().watching)) {
      this.log.info(
        { ageSeconds: Math.round(this.tableAgeSeconds() ?? 0), routes: this.current.routes.length },
        "serving a route table not confirmed by the API",
      );
      return;
    }
    this.current = { ...this.current, syncedAt: new Date().toISOString() };
    if (Date.now() - this.savedAt > 30_000) this.save();
  }

  private save(): void {
    if (!this.current) return;
    try {
      saveTable(this.opts.dataDir, this.current);
      this.savedAt = Date.now();
    } catch (err) {
      this.log.error({ err: (err as Error).message }, "could not save the route table");
    }
  }

  private rebuild(): void {
    const [ingresses, classes, services, slices, secrets] = this.informers.map((i) => i.list());
    const built = buildTable(
      {
        className: this.className,
        ingresses: ingresses as Ingress[],
        classes: classes as IngressClass[],
        services: services as Service[],
        slices: slices as EndpointSlice[],
        secrets,
      },
      this.current,
    );
    for (const w of built.warnings) this.log.warn({ warning: w }, "route table: kept last good");
    if (!sameRoutes(this.current, built.table)) {
      this.swap(built.table);
      this.save();
      this.log.info(
        { routes: built.table.routes.length, backends: Object.keys(built.table.backends).length },
        "route table updated",
      );
    } else if (this.current) {
      this.current = { ...this.current, syncedAt: built.table.syncedAt };
    }
    void this.writeStatus(built.ingresses);
  }

  private statusAddress(): {
    ip?: string;
    hostname?: string;
    ports: { port: number; protocol: string }[];
  } {
    const { host, port } = splitHostPort(this.address);
    const addr =
      this.opts.publishAddress ?? (host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host);
    const ports = [{ port, protocol: "TCP" }];
    if (this.tlsAddress) ports.push({ port: splitHostPort(this.tlsAddress).port, protocol: "TCP" });
    return /^[\d.]+$|:/.test(addr) ? { ip: addr, ports } : { hostname: addr, ports };
  }

  /** Sets status.loadBalancer on the class's Ingresses where it differs. */
  private async writeStatus(ingresses: Ingress[]): Promise<void> {
    if (!this.client) return;
    const want = [this.statusAddress()];
    const text = JSON.stringify(want);
    for (const ing of ingresses) {
      const id = `${ing.metadata.namespace}/${ing.metadata.name}`;
      if (JSON.stringify(ing.status?.loadBalancer?.ingress ?? []) === text) continue;
      if (this.statusWritten.get(id) === `${ing.metadata.resourceVersion}`) continue;
      try {
        const next = structuredClone(ing) as Ingress;
        next.status = { ...next.status, loadBalancer: { ingress: want } };
        await this.client.updateStatus(next);
        this.log.info({ ingress: id, loadBalancer: want }, "Ingress status updated");
      } catch (err) {
        this.statusWritten.set(id, `${ing.metadata.resourceVersion}`);
        this.log.warn(
          { ingress: id, err: (err as Error).message },
          "could not update Ingress status",
        );
      }
    }
  }

  /**
   * Stops: the listeners stop accepting; for a moment (a tenth of `graceMs`, at
   * most 1 s) open connections are still served, each response closing its
   * connection, so a request already on its way is not cut off; then idle
   * connections are closed and requests in flight get until `graceMs` to finish.
   */
  async stop(graceMs = 30_000): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.stopSync.abort();
    clearTimeout(this.timer);
    clearInterval(this.confirmTimer);
    this.proxy.draining = true;
    // net.Server's close stops accepting without http.Server's closing of idle connections.
    const closed = this.servers.map(
      (s) => new Promise<void>((r) => NetServer.prototype.close.call(s, () => r())),
    );
    await new Promise((r) => setTimeout(r, Math.min(1000, graceMs / 10)));
    for (;;) {
      for (const s of this.servers) s.closeIdleConnections();
      if (this.proxy.inFlight === 0 || Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const s of this.servers) s.closeAllConnections();
    await Promise.all(closed);
    if (this.admin) {
      this.admin.closeAllConnections();
      await new Promise<void>((r) => this.admin?.close(() => r()));
    }
    this.proxy.close();
    this.client?.close();
  }
}

function listen(server: Server, addr: string): Promise<string> {
  const { host, port } = splitHostPort(addr);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const a = server.address() as AddressInfo;
      resolve(a.family === "IPv6" ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
    });
  });
}
