/**
 * startControlPlane: one running control plane from its options, in this order:
 * the data dir, the store, the credentials, the apiserver, the system namespaces,
 * the kubeconfig (atomically), the built-in controllers. If any step fails, what
 * started is stopped and what this start created on disk is removed (a kubeconfig
 * this start wrote included), and the error is thrown (a StartupError for the
 * failures a person can fix). The kubeconfig goes before the controllers because
 * their start keeps the event loop busy: written after, it waited tens of
 * milliseconds behind them.
 */

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { RestConfig } from "@setpoint/runtime";
import type { Logger } from "pino";
import { pino } from "pino";
import type { AuditOptions } from "../apiserver/audit/index.ts";
import type { ApiLimits } from "../apiserver/endpoints/limits.ts";
import { TokenAuthenticator, type UserInfo } from "../apiserver/server/auth.ts";
import { ensureSystemNamespaces } from "../apiserver/server/bootstrap.ts";
import type { ConnectionLimits, InflightLimits } from "../apiserver/server/index.ts";
import { writeKubeconfig } from "../apiserver/server/kubeconfig-yaml.ts";
import { ensureKubernetesService } from "../apiserver/server/kubernetes-service.ts";
import { type ApiServer, startApiServer } from "../apiserver/server/server.ts";
import {
  type ControllerManager,
  type CreateControllerManagerOptions,
  createControllerManager,
  SCHEDULER_CONTROLLER,
} from "../controllers/index.ts";
import {
  DEFAULT_SERVICE_RANGES,
  firstServiceIP,
  type ServiceRanges,
} from "../registry/builtin/index.ts";
import type { Registry } from "../registry/registry.ts";
import type { Store } from "../storage/store.ts";
import { ApiserverIdentity } from "./apiserver-identity.ts";
import { CreatedFiles } from "./created-files.ts";
import {
  CONTROLLER_MANAGER_IDENTITY,
  type ComponentIdentity,
  type Credentials,
  dataDirCredentials,
  ephemeralCredentials,
  SCHEDULER_IDENTITY,
} from "./credentials.ts";
import { listenFailure } from "./errors.ts";
import { openStore, type StorageOptions } from "./store.ts";

/** The kubeconfig's file name in the data dir. */
export const KUBECONFIG_FILE = "kubeconfig";

/** The user the admin token stands for. */
export const ADMIN_USER: UserInfo = { name: "admin", groups: ["system:masters"] };

export interface ControllerOptions {
  /** Built-in controllers not to run, by name (default: none). */
  disabled?: readonly string[];
  /** Controllers off by default to run (OFF_BY_DEFAULT_CONTROLLERS; `setpoint up` runs them). */
  enabled?: readonly string[];
  /** Campaign for the controller managers' Lease (so another manager can stand by). */
  leaderElection?: boolean;
  /** How long an Event lives after its latest occurrence. */
  eventTtlMs?: number;
  /** How long a Node may go without renewing its Lease before it is Unknown. */
  nodeMonitorGracePeriodMs?: number;
  /** Terminated Pods kept before the oldest are deleted (0: no limit). */
  terminatedPodGcThreshold?: number;
  /** Their logger (default: the control plane's, with component "controller-manager"). */
  logger?: Logger;
}

export interface ControlPlaneOptions {
  /**
   * A data dir kept across starts (made if absent): the SQLite file, the serving
   * certificate and its CA, the admin token, the ServiceAccount key and the
   * kubeconfig live there, and the server always serves https with authentication,
   * as `setpoint up` does. Absent: a temporary dir, removed by stop(), with
   * credentials made per start as `tls` and `auth` say.
   */
  dataDir?: string;
  /** Default: SQLite, a file in the (data or temporary) dir. */
  storage?: StorageOptions;
  /** Listen address (default 127.0.0.1). */
  host?: string;
  /** Listen port (default 0: a free one). */
  port?: number;
  /** Without a data dir: serve https with a fresh CA (default false: plain http). */
  tls?: boolean;
  /** Without a data dir: require a fresh admin bearer token (default: as `tls`). */
  auth?: boolean;
  /** Extra DNS names or IPs for the serving certificate (made only on first start). */
  tlsSans?: readonly string[];
  /** More bearer tokens and the users they stand for. */
  extraTokens?: readonly [string, UserInfo][];
  /** Kubernetes minor version the server reports (27..33). */
  kubernetesMinor?: number;
  /** Types served (default the built-ins). */
  registry?: Registry;
  /** Server bounds to shrink (watch cache window, bookmark interval, ...). */
  limits?: Partial<ApiLimits>;
  /** Connection bounds (header and request timeouts, idle keep-alive, open connections). */
  connections?: Partial<ConnectionLimits>;
  /** Requests worked on at once, reads and writes apart (default Kubernetes' 400 and 200). */
  inflight?: Partial<InflightLimits>;
  /** More CAs (PEM) whose client certificates authenticate (--client-ca-file). */
  clientCaCerts?: string[];
  /** An audit log: its policy, file and rotation (--audit-policy-file, --audit-log-*). */
  audit?: AuditOptions;
  /**
   * The built-in controllers, in process (as their own identities where the server
   * authenticates and the CA's key is at hand; else as loopback clients); false or
   * absent: none.
   */
  controllers?: false | ControllerOptions;
  /** The ranges Services' cluster IPs and node ports come from (default 127.100.0.0/16, 30000-32767). */
  serviceRanges?: ServiceRanges;
  /** The apiserver's logger (default silent). */
  logger?: Logger;
  /**
   * Keep an apiserver identity Lease in kube-system (apiserver-identity.ts), as
   * `setpoint up` does (default false).
   */
  identityLease?: boolean;
  /**
   * ServiceAccount admission (default false): Pods get `default` as their
   * ServiceAccount, which must exist, and the kube-api-access volume, as
   * `setpoint up` serves them. Off, as in envtest, where no controller makes
   * the `default` ServiceAccounts.
   */
  serviceAccountAdmission?: boolean;
}

/** The names of the `kubernetes` Service the serving certificate holds. */
const KUBERNETES_SERVICE_NAMES = [
  "kubernetes",
  "kubernetes.default",
  "kubernetes.default.svc",
  "kubernetes.default.svc.cluster.local",
];

/** A running control plane. */
export interface ControlPlane {
  /** Base URL of the apiserver. */
  readonly url: string;
  /** How the admin reaches the server (CA and token when there are any). */
  readonly config: RestConfig;
  /** The kubeconfig written for the admin. */
  readonly kubeconfigPath: string;
  /** PEM of the CA that signed the serving certificate (https only). */
  readonly caCert: string | undefined;
  /** The admin bearer token (with authentication only). */
  readonly token: string | undefined;
  /** The data dir, or the temporary dir stop() removes. */
  readonly dir: string;
  readonly server: ApiServer;
  readonly store: Store;
  /** The built-in controllers running in process, if any. */
  readonly controllers: ControllerManager | undefined;
  /** Stops the controllers, the server and the store (and removes a temporary dir). */
  stop(): Promise<void>;
}

/**
 * Who the in-process controllers are and how they reach the server: through
 * in-process connections (server.connect(): HTTP in memory, no TLS). Where the
 * server authenticates, the controller manager is `system:kube-controller-manager`
 * and the scheduler `system:kube-scheduler` (by process tokens, which never leave
 * memory), and each controller writes as its own ServiceAccount, as in
 * Kubernetes; otherwise (no authentication) they all use the loopback config.
 */
function controllerIdentities(
  server: ApiServer,
  loopback: RestConfig,
): Pick<
  CreateControllerManagerOptions,
  "restConfig" | "useServiceAccountCredentials" | "controllerClients"
> {
  // The CA stays in the config, unused for the connections: the root CA
  // publisher hands it to every namespace (kube-root-ca.crt).
  const ca = loopback.ca ? { ca: loopback.ca } : {};
  // #region in-process-client
  const connect = () => server.connect();
  const as = (who: ComponentIdentity): RestConfig | undefined => {
    const token = server.processToken({ name: who.user, groups: who.groups });
    return token === undefined ? undefined : { server: server.url, connect, token, ...ca };
  };
  // #endregion
  const manager = as(CONTROLLER_MANAGER_IDENTITY);
  const scheduler = as(SCHEDULER_IDENTITY);
  if (!manager || !scheduler) return { restConfig: { ...loopback, connect } };
  return {
    restConfig: manager,
    useServiceAccountCredentials: true,
    controllerClients: { [SCHEDULER_CONTROLLER]: scheduler },
  };
}

/** Starts a control plane; see the module comment. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const logger = opts.logger ?? pino({ level: "silent" });
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port ?? 0;
  const persistent = opts.dataDir !== undefined;
  const created = new CreatedFiles();
  let dir: string;
  if (opts.dataDir !== undefined) {
    dir = resolve(opts.dataDir);
    created.mkdir(dir);
  } else {
    dir = mkdtempSync(join(tmpdir(), "setpoint-"));
  }

  // Each step that started something pushes how to stop it; run in reverse on failure or stop().
  const stops: (() => Promise<void> | void)[] = [];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  const removeDir = () => {
    if (!persistent) rmSync(dir, { recursive: true, force: true });
  };

  try {
    const store = await openStore(opts.storage ?? { backend: "sqlite" }, dir, created);
    stops.push(() => store.close());

    const sans = [...(opts.tlsSans ?? [])];
    if (host !== "0.0.0.0" && host !== "::") sans.push(host);
    // As kube-apiserver's: the names and cluster IP of the `kubernetes` Service, which
    // Pods' in-cluster clients connect to (made only when the certificate is).
    sans.push(
      ...KUBERNETES_SERVICE_NAMES,
      firstServiceIP((opts.serviceRanges ?? DEFAULT_SERVICE_RANGES).clusterIPRange),
    );
    const creds: Credentials = persistent
      ? await dataDirCredentials(dir, sans, created)
      : await ephemeralCredentials({
          tls: opts.tls ?? false,
          auth: opts.auth ?? opts.tls ?? false,
          hosts: sans,
        });
    const authenticator = creds.adminToken
      ? new TokenAuthenticator([[creds.adminToken, ADMIN_USER], ...(opts.extraTokens ?? [])])
      : undefined;

    let server: ApiServer;
    try {
      server = await startApiServer({
        store,
        host,
        port,
        logger,
        ...(creds.tls ? { tls: creds.tls } : {}),
        ...(authenticator ? { authenticator } : {}),
        ...(creds.serviceAccountKey ? { serviceAccountKey: creds.serviceAccountKey } : {}),
        ...(opts.registry ? { registry: opts.registry } : {}),
        ...(opts.limits ? { limits: opts.limits } : {}),
        ...(opts.connections ? { connections: opts.connections } : {}),
        ...(opts.inflight ? { inflight: opts.inflight } : {}),
        ...(opts.clientCaCerts ? { clientCaCerts: opts.clientCaCerts } : {}),
        ...(opts.audit ? { audit: opts.audit } : {}),
        storageCheckName: opts.storage?.backend === "etcd" ? "etcd" : "storage",
        ...(opts.serviceRanges ? { serviceRanges: opts.serviceRanges } : {}),
        ...(opts.kubernetesMinor ? { kubernetesMinor: opts.kubernetesMinor } : {}),
        ...(opts.serviceAccountAdmission ? { serviceAccountAdmission: true } : {}),
      });
    } catch (err) {
      throw listenFailure(err, host, port) ?? err;
    }
    stops.push(() => server.close());

    // The server's own credentials: its loopback token where authentication is on.
    const loopback: RestConfig = {
      server: server.url,
      ...(creds.tls ? { ca: Buffer.from(creds.tls.caCert) } : {}),
      ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
    };
    const target = {
      url: server.url,
      ...(creds.tls ? { caCert: creds.tls.caCert } : {}),
      ...(server.loopbackToken ? { token: server.loopbackToken } : {}),
    };
    await ensureSystemNamespaces(target);
    await ensureKubernetesService(target, {
      clusterIPRange: (opts.serviceRanges ?? DEFAULT_SERVICE_RANGES).clusterIPRange,
      address: /^\d+\.\d+\.\d+\.\d+$/.test(host) && host !== "0.0.0.0" ? host : "127.0.0.1",
      port: server.port,
    });

    if (opts.identityLease) {
      const storage = opts.storage ?? { backend: "sqlite" };
      const identity = new ApiserverIdentity({
        config: loopback,
        url: server.url,
        storage: storage.backend === "etcd" ? storage.endpoints.join(",") : storage.backend,
        logger,
      });
      await identity.start();
      stops.push(() => identity.stop());
    }

    const kubeconfigPath = join(dir, KUBECONFIG_FILE);
    if (persistent && !existsSync(kubeconfigPath)) created.add(kubeconfigPath);
    await writeKubeconfig(kubeconfigPath, {
      server: server.url,
      ...(creds.tls ? { caCert: creds.tls.caCert } : {}),
      ...(creds.adminToken ? { token: creds.adminToken } : {}),
      ...(creds.adminToken && creds.tls?.admin ? { clientCertificate: creds.tls.admin } : {}),
    });

    let controllers: ControllerManager | undefined;
    if (opts.controllers) {
      const c = opts.controllers;
      const manager = createControllerManager({
        ...controllerIdentities(server, loopback),
        disabled: c.disabled ?? [],
        ...(c.enabled ? { enabled: c.enabled } : {}),
        leaderElection: c.leaderElection ?? false,
        ...(c.eventTtlMs ? { eventTtl: { ttlMs: c.eventTtlMs } } : {}),
        nodeLifecycle: { nodeMonitorGracePeriodMs: c.nodeMonitorGracePeriodMs },
        podGc: { terminatedPodGcThreshold: c.terminatedPodGcThreshold },
        logger: c.logger ?? logger.child({ component: "controller-manager" }),
      });
      stops.push(() => manager.stop());
      await manager.start();
      controllers = manager;
    }

    created.commit();

    const config: RestConfig = {
      server: server.url,
      ...(creds.tls ? { ca: Buffer.from(creds.tls.caCert) } : {}),
      ...(creds.adminToken ? { token: creds.adminToken } : {}),
    };
    let stopped: Promise<void> | undefined;
    return {
      url: server.url,
      config,
      kubeconfigPath,
      caCert: creds.tls?.caCert,
      token: creds.adminToken,
      dir,
      server,
      store,
      controllers,
      stop() {
        stopped ??= stopAll().finally(removeDir);
        return stopped;
      },
    };
  } catch (err) {
    await stopAll().catch((stopErr: unknown) => {
      logger.error({ err: stopErr }, "stopping after a failed start");
    });
    created.rollback();
    removeDir();
    throw err;
  }
}
