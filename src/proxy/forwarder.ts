/**
 * The connection path of the service proxy: a TCP listener per Service port on
 * its cluster IP (and per node port on the node's address), each connection
 * forwarded to one ready endpoint of that port, bytes copied both ways (with
 * half-closes passed on). Nothing here calls the apiserver.
 *
 * - The routes are one map, swapped whole by `apply`; a connection looks its
 *   route up once, when it is accepted. Listeners are then opened for new
 *   addresses and closed for gone ones; connections already forwarded live on.
 * - Endpoints are chosen round-robin, skipping ejected ones (dataplane's
 *   EndpointPicker). A connect that fails (refused, reset, unreachable, timed
 *   out) ejects the endpoint and is retried on another, up to `attempts`; the
 *   client's first bytes wait, paused, until a backend is connected.
 * - A port without endpoints refuses connections (the client sees a reset),
 *   as kube-proxy rejects them.
 * - A listener that cannot be opened (address in use, a port below 1024
 *   without the privilege) is logged once and tried again every
 *   RELISTEN_MS.
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { RuntimeLogger } from "@setpoint/runtime";
import { type Endpoint, EndpointPicker, endpointId } from "../dataplane/index.ts";
import type { ServiceTable } from "./table.ts";

/** How often a listener that failed to open is tried again. */
export const RELISTEN_MS = 5_000;
/** Default connect timeout to an endpoint. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
/** Default connect attempts per connection (each on another endpoint when there is one). */
export const DEFAULT_ATTEMPTS = 3;

export interface ForwarderOptions {
  /** The node's address, where node ports listen. */
  nodeAddress: string;
  logger: RuntimeLogger;
  ejectMs?: number | undefined;
  connectTimeoutMs?: number | undefined;
  attempts?: number | undefined;
}

/** One listening address and what it forwards to. */
interface Route {
  /** "namespace/name:port" of the Service port. */
  backend: string;
  endpoints: Endpoint[];
}

interface Listener {
  server: Server;
  listening: boolean;
}

export class Forwarder {
  private routes = new Map<string, Route>();
  private readonly listeners = new Map<string, Listener>();
  /** The last error of each address that failed to open (logged once per code). */
  private readonly errors = new Map<string, string>();
  private readonly picker: EndpointPicker;
  private readonly connections = new Set<Socket>();
  private relisten: NodeJS.Timeout | undefined;
  private closed = false;
  /** Connections forwarded, connect failures (each ejected an endpoint), connections refused. */
  readonly counts = { forwarded: 0, connectFailures: 0, refused: 0 };

  constructor(private readonly opts: ForwarderOptions) {
    this.picker = new EndpointPicker(opts.ejectMs);
  }

  /** The addresses ("ip:port") listened on now. */
  get addresses(): string[] {
    return [...this.listeners].filter(([, l]) => l.listening).map(([a]) => a);
  }

  /** Makes `table` the one connections are forwarded with, then opens and closes listeners to match. */
  apply(table: ServiceTable): void {
    const routes = new Map<string, Route>();
    for (const svc of table.services) {
      for (const p of svc.ports) {
        if (p.protocol !== "TCP") continue;
        const route = {
          backend: `${svc.namespace}/${svc.name}:${p.port}`,
          endpoints: p.endpoints,
        };
        routes.set(`${svc.clusterIP}:${p.port}`, route);
        if (p.nodePort) routes.set(`${this.opts.nodeAddress}:${p.nodePort}`, route);
      }
    }
    this.routes = routes;
    this.reconcileListeners();
  }

  private reconcileListeners(): void {
    if (this.closed) return;
    for (const [addr, l] of this.listeners) {
      if (this.routes.has(addr)) continue;
      this.listeners.delete(addr);
      l.server.close();
    }
    let pending = false;
    for (const addr of this.routes.keys()) {
      const l = this.listeners.get(addr);
      if (l?.listening) continue;
      if (l) {
        pending = true;
        continue;
      }
      this.open(addr);
    }
    if (pending && !this.relisten) {
      this.relisten = setTimeout(() => {
        this.relisten = undefined;
        for (const [addr, l] of this.listeners) {
          if (!l.listening) {
            this.listeners.delete(addr);
            l.server.close();
          }
        }
        this.reconcileListeners();
      }, RELISTEN_MS);
      this.relisten.unref();
    }
  }

  private open(addr: string): void {
    const i = addr.lastIndexOf(":");
    const host = addr.slice(0, i);
    const port = Number(addr.slice(i + 1));
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true }, (sock) =>
      this.accept(addr, sock),
    );
    const listener: Listener = { server, listening: false };
    this.listeners.set(addr, listener);
    server.on("error", (err: NodeJS.ErrnoException) => {
      if (listener.listening) return;
      const code = err.code ?? err.message;
      if (this.errors.get(addr) !== code) {
        this.errors.set(addr, code);
        this.opts.logger.warn(
          { address: addr, err: code, retryMs: RELISTEN_MS },
          "service proxy could not listen; will retry",
        );
      }
      this.reconcileListeners();
    });
    server.listen({ host, port, exclusive: true }, () => {
      listener.listening = true;
      if (this.errors.delete(addr))
        this.opts.logger.info({ address: addr }, "service proxy listening");
    });
  }

  private accept(addr: string, client: Socket): void {
    const route = this.routes.get(addr);
    if (!route || route.endpoints.length === 0) {
      this.counts.refused++;
      client.resetAndDestroy();
      return;
    }
    this.connections.add(client);
    client.on("close", () => this.connections.delete(client));
    client.on("error", () => client.destroy());
    this.dial(route, client, new Set(), 0);
  }

  private dial(route: Route, client: Socket, tried: Set<string>, attempt: number): void {
    if (client.destroyed) return;
    const ep = this.picker.pick(route.backend, route.endpoints, tried);
    const attempts = this.opts.attempts ?? DEFAULT_ATTEMPTS;
    if (!ep || attempt >= attempts) {
      this.counts.refused++;
      client.resetAndDestroy();
      return;
    }
    tried.add(endpointId(ep));
    const upstream = connect({ host: ep.ip, port: ep.port, allowHalfOpen: true });
    upstream.setNoDelay(true);
    const timer = setTimeout(
      () => upstream.destroy(Object.assign(new Error("connect timeout"), { code: "ETIMEDOUT" })),
      this.opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    );
    let connected = false;
    upstream.once("connect", () => {
      clearTimeout(timer);
      connected = true;
      this.picker.ok(ep);
      this.counts.forwarded++;
      this.connections.add(upstream);
      upstream.on("close", () => {
        this.connections.delete(upstream);
        client.destroy();
      });
      client.on("close", () => upstream.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (connected) {
        client.destroy();
        return;
      }
      this.counts.connectFailures++;
      const ms = this.picker.fail(ep);
      this.opts.logger.warn(
        {
          backend: route.backend,
          endpoint: endpointId(ep),
          err: err.code ?? err.message,
          ejectMs: ms,
        },
        "service endpoint failed; ejected, trying another",
      );
      this.dial(route, client, tried, attempt + 1);
    });
  }

  /** Closes every listener and connection. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relisten);
    const closing = [...this.listeners.values()].map(
      (l) => new Promise<void>((r) => (l.listening ? l.server.close(() => r()) : r())),
    );
    this.listeners.clear();
    for (const c of this.connections) c.destroy();
    await Promise.all(closing);
  }
}
