/**
 * Each built-in controller as its own identity, as kube-controller-manager's
 * `--use-service-account-credentials` does: controller X writes as the
 * ServiceAccount `kube-system/<X's account>` (CONTROLLER_SERVICE_ACCOUNTS, the
 * names Kubernetes gives them), which the bootstrap policy binds to the ClusterRole
 * `system:controller:<account>` holding only what X needs. The controller manager
 * itself (the root client, `system:kube-controller-manager`) only lists and
 * watches for the shared informers, and makes each account and its tokens: it
 * gets or creates the ServiceAccount, asks for a token (TokenRequest, an hour
 * long) and asks for a new one once TOKEN_RENEW_FRACTION of its life is gone, or
 * at once after a 401 (the account was deleted and made again, the key changed).
 */
import {
  Client,
  isAlreadyExists,
  isNotFound,
  type Logger,
  type RestConfig,
  silentLogger,
} from "@setpoint/runtime";

/** Where the controllers' ServiceAccounts live. */
export const CONTROLLER_ACCOUNTS_NAMESPACE = "kube-system";

/**
 * The ServiceAccount each built-in controller acts as, by controller name (as
 * Kubernetes names the accounts of the controllers it has; `event-ttl-controller`
 * is Setpoint's own). The scheduler is not here: it has its own user,
 * `system:kube-scheduler`.
 */
export const CONTROLLER_SERVICE_ACCOUNTS: Readonly<Record<string, string>> = {
  "garbage-collector": "generic-garbage-collector",
  namespace: "namespace-controller",
  "event-ttl": "event-ttl-controller",
  serviceaccount: "service-account-controller",
  replicaset: "replicaset-controller",
  deployment: "deployment-controller",
  "node-lifecycle": "node-controller",
  "pod-garbage-collector": "pod-garbage-collector",
  endpoint: "endpoint-controller",
  endpointslice: "endpointslice-controller",
  "clusterrole-aggregation": "clusterrole-aggregation-controller",
  disruption: "disruption-controller",
  job: "job-controller",
  "ttl-after-finished": "ttl-after-finished-controller",
  "root-ca-cert-publisher": "root-ca-cert-publisher",
};

/** How long a controller's token is asked for (Kubernetes' controller tokens: an hour). */
export const CONTROLLER_TOKEN_SECONDS = 3600;
/** The share of a token's life after which a new one is asked for. */
export const TOKEN_RENEW_FRACTION = 0.8;

const SERVICE_ACCOUNT = { apiVersion: "v1", kind: "ServiceAccount" } as const;

interface HeldToken {
  token: string;
  renewAt: number;
}

/** Clients that act as the controllers' ServiceAccounts, their tokens minted through `root`. */
export class ServiceAccountCredentials {
  private readonly held = new Map<string, HeldToken>();
  private readonly pending = new Map<string, Promise<string>>();
  private readonly clients: Client[] = [];
  private readonly log: Logger;
  private readonly now: () => number;

  constructor(
    private readonly root: Client,
    opts: { logger?: Logger; now?: () => number } = {},
  ) {
    this.log = opts.logger ?? silentLogger();
    this.now = opts.now ?? Date.now;
  }

  /** How to reach the server as `kube-system/<account>`: the root's server and CA, a minted token. */
  restConfigFor(account: string): RestConfig {
    const {
      cert: _cert,
      key: _key,
      token: _token,
      tokenFile: _file,
      username: _user,
      password: _password,
      user: _name,
      ...server
    } = this.root.config;
    return { ...server, tokenSource: ({ refresh }) => this.token(account, refresh) };
  }

  /** A client acting as `kube-system/<account>` (closed by close()). */
  clientFor(account: string): Client {
    const client = new Client(this.restConfigFor(account));
    this.clients.push(client);
    return client;
  }

  /** Closes the clients made here. */
  close(): void {
    for (const c of this.clients.splice(0)) c.close();
  }

  /** The account's token: the one held while fresh, else a new one (one request at a time). */
  token(account: string, refresh = false): Promise<string> {
    const held = this.held.get(account);
    if (held && !refresh && this.now() < held.renewAt) return Promise.resolve(held.token);
    let p = this.pending.get(account);
    if (!p) {
      p = this.mint(account).finally(() => this.pending.delete(account));
      this.pending.set(account, p);
    }
    return p;
  }

  private async mint(account: string): Promise<string> {
    await this.ensureAccount(account);
    const issuedAt = this.now();
    const res = (await this.root.create(
      {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        metadata: { name: account, namespace: CONTROLLER_ACCOUNTS_NAMESPACE },
        spec: { expirationSeconds: CONTROLLER_TOKEN_SECONDS },
      },
      { subresource: "token", parentType: SERVICE_ACCOUNT },
    )) as { status?: { token?: string; expirationTimestamp?: string } };
    const token = res.status?.token;
    if (!token) throw new Error(`the TokenRequest for ${account} returned no token`);
    const expires = Date.parse(res.status?.expirationTimestamp ?? "");
    const ttl = Number.isNaN(expires) ? CONTROLLER_TOKEN_SECONDS * 1000 : expires - Date.now();
    this.held.set(account, { token, renewAt: issuedAt + TOKEN_RENEW_FRACTION * ttl });
    this.log.debug({ account }, "controller token minted");
    return token;
  }

  /** Gets the ServiceAccount, creating it when absent. */
  private async ensureAccount(account: string): Promise<void> {
    try {
      await this.root.get(SERVICE_ACCOUNT, account, CONTROLLER_ACCOUNTS_NAMESPACE);
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    try {
      await this.root.create({
        ...SERVICE_ACCOUNT,
        metadata: { name: account, namespace: CONTROLLER_ACCOUNTS_NAMESPACE },
      });
    } catch (err) {
      // Another controller manager made it first.
      if (!isAlreadyExists(err)) throw err;
    }
  }
}
