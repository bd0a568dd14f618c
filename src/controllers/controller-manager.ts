/**
 * The controller manager: the built-in controllers in one runtime Manager,
 * with leader election on a Lease in kube-system (only the leader's loops act;
 * a standby keeps its caches warm), `/metrics`, `/healthz` and `/readyz`.
 * Every controller is an ordinary client of the API server.
 */
import {
  Client,
  type LeaderElectionOptions,
  type Logger,
  Manager,
  type RestConfig,
  silentLogger,
} from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";
import {
  CONTROLLER_SERVICE_ACCOUNTS,
  ServiceAccountCredentials,
} from "./service-account-credentials.ts";

/** The Lease the controller managers of one control plane compete for. */
export const CONTROLLER_MANAGER_LEASE = "setpoint-controller-manager";
/** Where that Lease lives. */
export const CONTROLLER_MANAGER_LEASE_NAMESPACE = "kube-system";

export interface ControllerManagerOptions {
  /** The client to use; or `restConfig` to build one. */
  client?: Client;
  restConfig?: RestConfig;
  /**
   * Campaign for the controller managers' Lease and act only while holding it
   * (`true`: the default Lease and timings; an object overrides them).
   */
  leaderElection?: boolean | Partial<LeaderElectionOptions>;
  /** Where to serve /metrics ("host:port", ":port", 0 for a free port). */
  metricsAddr?: string | number;
  /** Where to serve /healthz and /readyz. */
  healthAddr?: string | number;
  /** Unique per process (the runtime's default: hostname and a UUID). */
  identity?: string;
  gracefulShutdownTimeoutMs?: number;
  logger?: Logger;
  /**
   * Each controller writes as its own ServiceAccount in kube-system, bound to its
   * `system:controller:*` ClusterRole (Kubernetes' --use-service-account-credentials);
   * the manager's own client only reads, and mints their tokens. Default false:
   * every controller writes with the manager's client.
   */
  useServiceAccountCredentials?: boolean;
  /**
   * Clients of their own for some controllers, by name (the scheduler's, as
   * `system:kube-scheduler`); they win over the ServiceAccounts.
   */
  controllerClients?: Readonly<Record<string, RestConfig>>;
}

export class ControllerManager {
  readonly manager: Manager;
  readonly controllers: readonly BuiltinController[];
  private readonly ownsClient: boolean;
  private readonly credentials: ServiceAccountCredentials | undefined;
  private readonly ownClients: Client[] = [];

  constructor(opts: ControllerManagerOptions, controllers: readonly BuiltinController[]) {
    const le = opts.leaderElection;
    const leaderElection: LeaderElectionOptions | undefined = le
      ? {
          id: CONTROLLER_MANAGER_LEASE,
          namespace: CONTROLLER_MANAGER_LEASE_NAMESPACE,
          ...(typeof le === "object" ? le : {}),
        }
      : undefined;
    this.manager = new Manager({
      client: opts.client,
      restConfig: opts.restConfig,
      identity: opts.identity,
      leaderElection,
      metricsAddr: opts.metricsAddr,
      healthAddr: opts.healthAddr,
      gracefulShutdownTimeoutMs: opts.gracefulShutdownTimeoutMs,
      logger: opts.logger ?? silentLogger(),
    });
    this.ownsClient = opts.client === undefined;
    this.controllers = controllers;
    this.credentials = opts.useServiceAccountCredentials
      ? new ServiceAccountCredentials(this.manager.client, { logger: this.manager.log })
      : undefined;
    for (const c of controllers) c.setup(this.manager, this.clientOf(c.name, opts));
  }

  /** The client controller `name` writes with, or undefined for the manager's. */
  private clientOf(name: string, opts: ControllerManagerOptions): Client | undefined {
    const own = opts.controllerClients?.[name];
    if (own) {
      const client = new Client(own);
      this.ownClients.push(client);
      return client;
    }
    const account = CONTROLLER_SERVICE_ACCOUNTS[name];
    if (this.credentials && account) return this.credentials.clientFor(account);
    if (this.credentials) {
      throw new Error(
        `controller ${name} has no ServiceAccount of its own; give it a client (controllerClients)`,
      );
    }
    return undefined;
  }

  /** Names of the controllers this manager runs. */
  get names(): string[] {
    return this.controllers.map((c) => c.name);
  }

  /**
   * Starts the manager; resolves once its caches have synced (leadership may
   * come later). Aborting `signal` shuts down like `stop()`.
   */
  async start(signal?: AbortSignal): Promise<void> {
    signal?.addEventListener("abort", () => void this.stop(), { once: true });
    await this.manager.start(signal);
  }

  /** Starts, then waits until stopped. */
  async run(signal?: AbortSignal): Promise<void> {
    await this.start(signal);
    await this.manager.done;
  }

  /** Stops reconciling (draining), releases the Lease, stops runnables, informers and servers. */
  async stop(): Promise<void> {
    await this.manager.stop();
    this.credentials?.close();
    for (const c of this.ownClients.splice(0)) c.close();
    if (this.ownsClient) this.manager.client.close();
  }

  /** Resolves when the manager has stopped. */
  get done(): Promise<void> {
    return this.manager.done;
  }
}
