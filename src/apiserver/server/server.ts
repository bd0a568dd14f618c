/**
 * The apiserver process core: an HTTP(S) server that authenticates requests,
 * answers the public endpoints (/version, /healthz, /livez, /readyz) and hands
 * everything under /api, /apis and /openapi to the API handler.
 */
import { randomBytes, randomUUID } from "node:crypto";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { errors, type StatusError } from "@setpoint/api";
import { type Logger, pino } from "pino";
import type { ServiceRanges } from "../../registry/builtin/index.ts";
import { MASTERS } from "../../registry/builtin/rbac/index.ts";
import { customResourceDefinitions } from "../../registry/crd/definition.ts";
import { createBuiltinRegistry, type Registry } from "../../registry/registry.ts";
import type { ReviewServices } from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import {
  type AuditOptions,
  Auditor,
  auditResponseStatus,
  failedAuthenticationMessage,
} from "../audit/index.ts";
import { CrdController, installCrdType, restoreCustomResources } from "../crd/establishing.ts";
import { type ApiHandler, type ApiLimits, createApiHandler } from "../endpoints/handler.ts";
import { markUpgrade } from "../endpoints/node-connect.ts";
import { parseRoute } from "../endpoints/routes.ts";
import {
  type ApiMetrics,
  classifyRequest,
  clientOf,
  createApiMetrics,
  instrumentStore,
  type RequestInfo,
} from "../metrics/index.ts";
import { CLAIMS_REPAIR_INTERVAL_MS, repairClaims } from "../store/index.ts";
import { ServiceAccountTokens } from "../tokens/index.ts";
import {
  decodeProtobufObject,
  decodeProtobufResponse,
  isProtobufContentType,
} from "../wire/protobuf/index.ts";
import {
  ANONYMOUS_ADMIN,
  type Authenticator,
  ClientCertificateAuthenticator,
  generateToken,
  isPublicPath,
  ServiceAccountTokenAuthenticator,
  TokenAuthenticator,
  type UserInfo,
} from "./auth.ts";
import { ensureBootstrapPolicy } from "./bootstrap.ts";
import type { TlsMaterial } from "./certs.ts";
import {
  applyConnectionLimits,
  type ConnectionLimits,
  checkingIntervalMs,
  handshakeTimeoutMs,
  resolveConnectionLimits,
} from "./connections.ts";
import { type HealthCheck, serveHealth } from "./health.ts";
import { InProcessConnections } from "./in-process.ts";
import { type InflightLimits, InflightSeats, TOO_MANY_REQUESTS_TEXT } from "./inflight.ts";

/** The Kubernetes minor version reported by default (kubectl picks its build by it). */
export const DEFAULT_KUBERNETES_MINOR = 32;
/** Kubernetes minor versions whose kubectl is known to work against Setpoint. */
export const SUPPORTED_KUBERNETES_MINORS = [27, 28, 29, 30, 31, 32, 33] as const;
/** How long close() waits for open requests before cutting connections. */
export const SHUTDOWN_GRACE_MS = 5_000;

export interface ApiServerOptions {
  store: Store;
  /** ServiceAccount admission on Pod creation (default off, as in a test environment). */
  serviceAccountAdmission?: boolean;
  /** Types served; default: the built-in types. */
  registry?: Registry;
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** Listen port; default 6443; 0 picks a free port. */
  port?: number;
  /** Serve https with this material; plain http when absent. */
  tls?: TlsMaterial;
  /**
   * More CAs (PEM) whose client certificates authenticate, beside `tls.caCert`
   * (kube-apiserver's --client-ca-file).
   */
  clientCaCerts?: string[];
  /**
   * Who may call; when absent every request is served as an anonymous admin. When
   * present, ServiceAccount tokens are accepted too.
   */
  authenticator?: Authenticator;
  /**
   * The key ServiceAccount tokens are signed with (at least 32 bytes; apiservers
   * sharing storage must share it); default: a random key, so tokens last as long
   * as the process.
   */
  serviceAccountKey?: string | Buffer;
  /** Reported Kubernetes minor version (27..33); default 32. */
  kubernetesMinor?: number;
  logger?: Logger;
  limits?: Partial<ApiLimits>;
  /** Timeouts of what clients send, and the connection bound (connections.ts); default Kubernetes'. */
  connections?: Partial<ConnectionLimits>;
  /** Requests worked on at once, reads and writes apart (inflight.ts); default Kubernetes' 400 and 200. */
  inflight?: Partial<InflightLimits>;
  /**
   * Name of the storage health check in /healthz, /livez and /readyz (kube-apiserver's
   * is "etcd"); default "storage".
   */
  storageCheckName?: string;
  /** Without `registry`: the ranges Services' cluster IPs and node ports come from. */
  serviceRanges?: ServiceRanges;
  /** How often leaked claims (cluster IPs, node ports) are released; default 3 minutes. */
  claimsRepairIntervalMs?: number;
  /** Keep an audit log with this policy (kube-apiserver's --audit-policy-file, --audit-log-*). */
  audit?: AuditOptions;
}

export interface ApiServer {
  /** Base URL, e.g. https://127.0.0.1:6443 */
  readonly url: string;
  readonly port: number;
  readonly registry: Registry;
  /** A token accepted by this server for its own loopback requests (when auth is on). */
  readonly loopbackToken: string | undefined;
  /**
   * A connection to this server from within the process (in-process.ts): plain
   * HTTP/1.1 in memory, no socket and no TLS. For RestConfig.connect.
   */
  connect(): Duplex;
  /**
   * A token that authenticates `user` on this server for as long as the process
   * runs: kept in memory only, and not accepted by TokenReview (as the loopback
   * token). How components in the process (`setpoint up`'s controller manager and
   * scheduler) present their identities over connect(). Undefined when the server
   * authenticates no one.
   */
  processToken(user: UserInfo): string | undefined;
  /** Stops accepting requests, ends watches cleanly, and closes connections. */
  close(): Promise<void>;
}

export function versionInfo(minor: number): Record<string, string> {
  return {
    major: "1",
    minor: String(minor),
    gitVersion: `v1.${minor}.0+setpoint`,
    gitCommit: "",
    gitTreeState: "clean",
    buildDate: "1970-01-01T00:00:00Z",
    goVersion: `node${process.versions.node}`,
    compiler: "node",
    platform: `${process.platform}/${process.arch === "x64" ? "amd64" : process.arch}`,
  };
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

function sendStatus(res: ServerResponse, err: StatusError): void {
  auditResponseStatus(res, err.status);
  if (!res.headersSent) sendJson(res, err.code, err.status);
  else res.destroy();
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    "X-Content-Type-Options": "nosniff",
  });
  res.end(text);
}

export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const logger = opts.logger ?? pino({ level: "silent" });
  const registry =
    opts.registry ??
    createBuiltinRegistry(opts.serviceRanges ? { serviceRanges: opts.serviceRanges } : {});
  const minor = opts.kubernetesMinor ?? DEFAULT_KUBERNETES_MINOR;
  if (!Number.isInteger(minor) || minor < 27 || minor > 33) {
    throw new Error(`unsupported Kubernetes minor version ${minor}: use 27 to 33`);
  }
  const version = versionInfo(minor);
  const auditor = opts.audit
    ? await Auditor.start(opts.audit, logger, (body, type, response) => {
        if (!isProtobufContentType(type)) return undefined;
        return response ? decodeProtobufResponse(body) : decodeProtobufObject(body);
      })
    : undefined;

  const serviceAccountTokens = new ServiceAccountTokens({
    key: opts.serviceAccountKey ?? randomBytes(32),
  });
  // Set below: ServiceAccount tokens are checked against the handler's watch cache.
  let handler: ApiHandler | undefined;
  let authenticator = opts.authenticator;
  let loopbackToken: string | undefined;
  let processTokens: TokenAuthenticator | undefined;
  let reviewToken: ReviewServices["reviewToken"];
  if (authenticator) {
    // The server's own requests (bootstrap, built-in loops running in process) use a
    // per-process token that never leaves memory.
    loopbackToken = generateToken();
    const loopbackUser: UserInfo = { name: "system:apiserver", groups: ["system:masters"] };
    const loopback = new TokenAuthenticator([[loopbackToken, loopbackUser]]);
    processTokens = loopback;
    const accounts = new ServiceAccountTokenAuthenticator(
      serviceAccountTokens,
      (ns, name) => handler?.liveUid("serviceaccounts", ns, name),
      (kind, ns, name) => handler?.liveUid(kind === "Pod" ? "pods" : "secrets", ns, name),
    );
    const outer = authenticator;
    // A verified client certificate first, then bearer tokens, as kube-apiserver orders them.
    const certificates = opts.tls ? new ClientCertificateAuthenticator() : undefined;
    authenticator = {
      authenticate: (req) =>
        certificates?.authenticate(req) ??
        outer.authenticate(req) ??
        loopback.authenticate(req) ??
        accounts.authenticate(req),
    };
    // TokenReview: the tokens a client may present (the process's own is not one).
    reviewToken = (token, audiences) => {
      const own = serviceAccountTokens.audiences;
      const target = audiences.length > 0 ? audiences : [...own];
      const fixed = outer.authenticateToken?.(token);
      if (fixed) {
        // A fixed token is good for the server's own audiences only.
        const good = target.filter((a) => own.includes(a));
        return good.length > 0
          ? { user: fixed, audiences: good }
          : {
              audiences: [],
              error: `token audiences ${goList(own)} is invalid for the target audiences ${goList(target)}`,
            };
      }
      return accounts.review(token, target);
    };
  }

  // CustomResourceDefinitions: the type, and the custom resources stored CRDs define.
  installCrdType(registry);

  // Set below: the metrics read the handler's watch caches for object counts.
  const metrics: ApiMetrics = createApiMetrics(() => handler?.typeStats() ?? []);
  const store = instrumentStore(opts.store, metrics.storageDurations);
  const seats = new InflightSeats(opts.inflight);
  const api: ApiHandler = await createApiHandler({
    store,
    registry,
    logger,
    serviceAccountTokens,
    ...(reviewToken ? { reviewToken } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.tls?.nodeClient ? { nodeClient: opts.tls.nodeClient } : {}),
    ...(opts.serviceAccountAdmission ? { serviceAccountAdmission: true } : {}),
  });
  handler = api;
  let closing = false;
  // The custom resources that stored CRDs define, served before the server listens.
  const crdStores = (name?: string) => api.systemStore(customResourceDefinitions, undefined, name);
  await restoreCustomResources(crdStores, registry, logger);
  await ensureBootstrapPolicy(registry, (def) => api.systemStore(def));

  // Health checks, named as kube-apiserver names its own (health.ts serves them).
  const ping: HealthCheck = { name: "ping", check: () => {} };
  const log: HealthCheck = { name: "log", check: () => {} };
  const storage: HealthCheck = {
    name: opts.storageCheckName ?? "storage",
    check: async () => {
      await opts.store.currentRevision();
    },
  };
  const informerSync: HealthCheck = {
    name: "informer-sync",
    check: () => {
      if (!api.ready()) throw new Error("watch caches not primed yet");
    },
  };
  const shutdown: HealthCheck = {
    name: "shutdown",
    check: () => {
      if (closing) throw new Error("process is shutting down");
    },
  };
  const healthChecks: Record<string, readonly HealthCheck[]> = {
    healthz: [ping, log, storage],
    livez: [ping, log],
    readyz: [ping, log, storage, informerSync, shutdown],
  };
  const serveHealthPath = (res: ServerResponse, path: string, url: string): void => {
    const endpoint = path.slice(1).split("/")[0];
    const q = url.indexOf("?");
    const query = new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
    serveHealth(res, endpoint, path, query, healthChecks[endpoint] ?? [], (name, err) =>
      logger.warn({ err, check: name }, `${endpoint} check failed`),
    ).then(
      (served) => {
        if (!served) sendText(res, 404, "404 page not found\n");
      },
      (err: unknown) => {
        logger.error({ err, path }, "health check failed");
        if (!res.headersSent) sendText(res, 500, "internal server error\n");
      },
    );
  };

  const serveMetrics = (res: ServerResponse): void => {
    metrics.registry.metrics().then(
      (text) => {
        res.writeHead(200, {
          "Content-Type": metrics.registry.contentType,
          "Content-Length": Buffer.byteLength(text),
        });
        res.end(text);
      },
      (err: unknown) => {
        logger.error({ err }, "collecting metrics failed");
        sendStatus(res, errors.internal("collecting metrics failed"));
      },
    );
  };

  /** A request's labels in Kubernetes' request metrics. */
  const requestLabels = (info: RequestInfo) => ({
    verb: info.verb,
    dry_run: info.dryRun,
    group: info.group,
    version: info.version,
    resource: info.resource,
    subresource: info.subresource,
    scope: info.scope,
    component: "apiserver",
  });

  /** Counts a request in Kubernetes' request metrics once its answer is done. */
  const countRequest = (req: IncomingMessage, res: ServerResponse, info: RequestInfo): void => {
    const labels = requestLabels(info);
    const kind = info.readOnly ? "readOnly" : "mutating";
    const start = process.hrtime.bigint();
    // Watches are long-running, not in flight (as kube-apiserver counts them).
    if (!info.longRunning) metrics.inflight.inc({ request_kind: kind });
    if (info.longRunning) metrics.longRunning.inc(labels);
    if (info.verb === "LIST" && info.wholeList) {
      metrics.clientLists.inc({
        client: metrics.clientLabel(clientOf(req.headers["user-agent"])),
        group: info.group,
        resource: info.resource,
      });
    }
    res.once("close", () => {
      if (!info.longRunning) metrics.inflight.dec({ request_kind: kind });
      if (info.longRunning) metrics.longRunning.dec(labels);
      metrics.requests.inc({ ...labels, code: String(res.statusCode) });
      metrics.durations.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    if (isPublicPath(path)) {
      if (auditor) {
        // Audited as whoever the credentials say, or as anonymous (kube-apiserver serves
        // these paths to anyone too).
        const caller = authenticator ? (authenticator.authenticate(req) ?? ANONYMOUS) : user0;
        auditor.begin(req, res, caller, path, queryOf(url, q), undefined, false);
      }
      if (path === "/version") {
        sendJson(res, 200, version);
      } else {
        serveHealthPath(res, path, url);
      }
      return;
    }
    let user: UserInfo | undefined = ANONYMOUS_ADMIN;
    if (authenticator) {
      user = authenticator.authenticate(req);
      if (!user) {
        auditor?.failedAuthentication(
          req,
          res,
          path,
          queryOf(url, q),
          parseRoute(path),
          failedAuthenticationMessage(req),
        );
        sendStatus(res, errors.unauthorized());
        return;
      }
    }
    const query = queryOf(url, q);
    const info = classifyRequest(req, path, query);
    const record = auditor?.begin(req, res, user, path, query, parseRoute(path), info.longRunning);
    if (path === "/metrics") {
      serveMetrics(res);
      return;
    }
    /** Gives back the request's seat (once answered and its work done), if it took one. */
    let done = () => {};
    if (!info.longRunning) {
      const kind = info.readOnly ? "readOnly" : "mutating";
      if (seats.take(kind)) {
        // A request answered at its deadline keeps its seat while its work goes on.
        let left = 2;
        done = () => {
          if (--left === 0) seats.give(kind);
        };
        res.once("close", done);
      } else if (!user.groups.includes(MASTERS)) {
        // system:masters is always answered (a super-admin, or the server's own loopback).
        res.setHeader("Retry-After", "1");
        sendText(res, 429, TOO_MANY_REQUESTS_TEXT);
        // Counted as kube-apiserver counts a request its in-flight limit drops.
        metrics.requests.inc({ ...requestLabels(info), code: "429" });
        return;
      }
    }
    countRequest(req, res, info);
    const requestId = randomUUID();
    const handling = api.handle(
      req,
      res,
      user,
      info.longRunning ? undefined : connections.requestTimeoutMs,
    );
    handling.then(done, done);
    handling.then(
      (handled) => {
        if (!handled) sendStatus(res, errors.notFound({ resource: "", name: path }));
      },
      (err: unknown) => {
        logger.error({ err, requestId, path }, "request failed");
        record?.panic(err);
        sendStatus(res, errors.internal("the server could not complete the request"));
      },
    );
  };

  const connections = resolveConnectionLimits(opts.connections);
  const connectionsCheckingInterval = checkingIntervalMs(connections);
  const server = opts.tls
    ? https.createServer(
        {
          cert: opts.tls.cert,
          key: opts.tls.key,
          // Client certificates are asked for and verified against the client CAs, never
          // required: a client without one authenticates with a token.
          requestCert: true,
          rejectUnauthorized: false,
          ca: [opts.tls.caCert, ...(opts.clientCaCerts ?? [])],
          connectionsCheckingInterval,
          handshakeTimeout: handshakeTimeoutMs(connections),
        },
        onRequest,
      )
    : http.createServer({ connectionsCheckingInterval }, onRequest);
  // Bounds what clients send (headers, bodies, idle connections); answers such as
  // watches are not cut off.
  applyConnectionLimits(server, connections);
  // Upgrades (WebSockets and SPDY for pods/exec, pods/portforward) take the ordinary
  // path, answered on their raw connection until a connect subresource takes it over.
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    markUpgrade(req, res, socket, head);
    socket.on("error", () => socket.destroy());
    onRequest(req, res);
  });

  // In-process connections: the same handler and limits, fed connections from memory.
  const inProcessServer = http.createServer({ connectionsCheckingInterval }, onRequest);
  applyConnectionLimits(inProcessServer, connections);
  const inProcess = new InProcessConnections(inProcessServer);
  const tokensByUser = new Map<string, string>();
  const processToken = (user: UserInfo): string | undefined => {
    if (!processTokens) return undefined;
    const key = JSON.stringify([user.name, user.groups ?? []]);
    let token = tokensByUser.get(key);
    if (token === undefined) {
      token = generateToken();
      tokensByUser.set(key, token);
      processTokens.add(token, user);
    }
    return token;
  };

  const host = opts.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 6443, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host === "0.0.0.0" ? "127.0.0.1" : host;
  const url = `${opts.tls ? "https" : "http"}://${urlHost}:${port}`;
  logger.info({ url }, "apiserver listening");
  const crds = new CrdController({
    crds: crdStores,
    registry,
    url,
    logger,
    ...(loopbackToken ? { token: loopbackToken } : {}),
  });
  crds.start();
  const repair = setInterval(() => {
    repairClaims(opts.store, registry.all()).then(
      (released) => {
        if (released.length > 0) logger.info({ released }, "released leaked claims");
      },
      (err: unknown) => logger.warn({ err }, "claims repair failed"),
    );
  }, opts.claimsRepairIntervalMs ?? CLAIMS_REPAIR_INTERVAL_MS);
  repair.unref();

  const close = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    clearInterval(repair);
    await crds.stop();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await api.close();
    // In-process clients are this process's own, stopped before the server.
    inProcess.closeAll();
    const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    timer.unref();
    await closed;
    clearTimeout(timer);
    await auditor?.close();
  };

  return {
    url,
    port,
    registry,
    loopbackToken,
    connect: () => inProcess.connect(),
    processToken,
    close,
  };
}

/** Who calls the public paths without credentials. */
const ANONYMOUS: UserInfo = { name: "system:anonymous", groups: ["system:unauthenticated"] };
/** Who calls when authentication is off. */
const user0: UserInfo = ANONYMOUS_ADMIN;

function queryOf(url: string, q: number): URLSearchParams {
  return new URLSearchParams(q < 0 ? "" : url.slice(q + 1));
}

/** A list of strings as Go's %q prints a []string: ["a" "b"]. */
function goList(items: readonly string[]): string {
  return `[${items.map((i) => JSON.stringify(i)).join(" ")}]`;
}
