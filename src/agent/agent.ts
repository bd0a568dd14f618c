/**
 * The node agent: runs the Pods bound to its Node as processes, as the kubelet does
 * with containers, and keeps them running when the control plane is gone.
 *
 * - At start it reads its state from disk (state/), adopts the processes that still
 *   run and restarts those that died, before it talks to the apiserver at all.
 * - It registers its Node (node/), renews its Lease every 10 s, and watches the Pods
 *   whose spec.nodeName is its node (an informer with a field selector). A new Pod
 *   gets an address (pod-addresses.ts) and a pod worker (pods/worker.ts); a Pod being
 *   deleted is stopped within its grace period, then its object is deleted (grace 0,
 *   uid precondition) as the kubelet does; a Pod gone from the apiserver is stopped.
 * - Status: each Pod's status is computed from its record and written (a merge patch
 *   of the status subresource) only when it differs from what the server holds.
 * - Nothing is stopped because the apiserver cannot be reached: until the Pod
 *   informer has listed, the Pods on disk are the desired state; after, the list is.
 * - Its authenticated endpoint (endpoint/, the kubelet's :10250) serves the Pods'
 *   container logs to the apiserver only; its port is in the Node's daemonEndpoints.
 * - The service table (src/proxy/) of Services' cluster IPs, node ports and ready
 *   endpoints is followed through the API and kept on disk; it gives Pods their
 *   Service environment variables, and the service proxy process
 *   (proxy-process.ts), which outlives the agent as Pods do, serves it.
 * - Stopping the agent leaves its Pods and its service proxy running (unless
 *   asked to stop the Pods, which stops the proxy too).
 * - In the isolated mode (sandbox/, `isolation: "namespaces"`) each Pod gets a
 *   network namespace and an address in 10.N.0.0/16; its sandbox is in its record,
 *   found again after a restart, and removed once its processes are gone.
 */
import { createServer, type Server } from "node:http";
import type { Server as HttpsServer } from "node:https";
import { join } from "node:path";
import type { KubeObject, Node, Pod } from "@setpoint/api";
import {
  type Client,
  Informer,
  isConflict,
  isNotFound,
  type RuntimeLogger,
} from "@setpoint/runtime";
import { ServiceTableSync, serviceEnv } from "../proxy/index.ts";
import { canonicalJson } from "./canonical-json.ts";
import { createEndpointServer, ExecSessions, loadOrCreateServingCert } from "./endpoint/index.ts";
import { PodEventRecorder } from "./events.ts";
import { ImageStore, importBuiltinImages } from "./images/index.ts";
import { LogRelayClient, LogRelayProcess, waitForPipesRelayed } from "./log-relay/index.ts";
import {
  machineResources,
  type NodeIdentity,
  nodeObject,
  nodeStatus,
  runLease,
} from "./node/index.ts";
import { DEFAULT_POD_RANGE, PodAddresses } from "./pod-addresses.ts";
import {
  Backoff,
  Cgroups,
  newPodRecord,
  type PodRecord,
  PodWorker,
  podStatus,
  referencedSources,
  rfc3339,
  tearDownVolumes,
  type VolumeSources,
} from "./pods/index.ts";
import { ProxyProcess } from "./proxy-process.ts";
import { ISOLATED_POD_NET, Isolation, type IsolationMode } from "./sandbox/index.ts";
import { type AgentStateData, emptyState, StateFile, type StoredToken } from "./state/index.ts";

/** How often the Node's status is compared with the server's (and written when it differs). */
export const NODE_STATUS_CHECK_MS = 10_000;
/** The Node's status is written at least this often, changed or not (the kubelet's report frequency). */
export const NODE_STATUS_REPORT_MS = 5 * 60_000;
/** Retry of status writes and deletions that failed (the apiserver is away). */
export const WRITE_RETRY_MS = 1_000;
/** How often the agent compares its Pods with the listed ones and rotates logs. */
export const HOUSEKEEPING_MS = 1_000;
/**
 * How often the ConfigMaps and Secrets of running Pods' volumes are read again and
 * their files rewritten when they changed (the kubelet resyncs each Pod every minute
 * or so; an update shows here within this).
 */
export const VOLUME_SYNC_MS = 10_000;
/** A projected token's validity when the volume names none (Kubernetes' default). */
export const DEFAULT_TOKEN_SECONDS = 3600;
/** A token is renewed once this share of its validity has passed, or it is older than a day (the kubelet's rule). */
export const TOKEN_RENEW_FRACTION = 0.8;
export const TOKEN_MAX_AGE_MS = 24 * 3600_000;
/** Status writes in flight at once (one per Pod). */
export const STATUS_WRITERS = 8;

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const NODE = { apiVersion: "v1", kind: "Node" } as const;
const CONFIGMAP = { apiVersion: "v1", kind: "ConfigMap" } as const;
const SECRET = { apiVersion: "v1", kind: "Secret" } as const;
const SERVICEACCOUNT = { apiVersion: "v1", kind: "ServiceAccount" } as const;

export interface AgentOptions {
  client: Client;
  nodeName: string;
  /** Where the state, logs and (by default) images live. */
  dataDir: string;
  /** The image store (default DATA/images). */
  imageDir?: string;
  /** Pod addresses are 127.N.x.y (default 10). */
  podRange?: number;
  /** The node's address (InternalIP, the Pods' hostIP). */
  address?: string;
  /** Where the agent's local status endpoint (/healthz, /pods; plain HTTP) listens (default 127.0.0.1, a free port). */
  listenHost?: string;
  listenPort?: number;
  /**
   * Where the authenticated endpoint the apiserver calls (`pods/log`; HTTPS, the
   * kubelet's :10250) listens (default 127.0.0.1, a free port); its port is the
   * Node's daemonEndpoints.kubeletEndpoint.
   */
  secureListenHost?: string;
  secureListenPort?: number;
  /** PEM CAs of the client certificates the secure endpoint accepts (the kubeconfig's CA); none: it refuses everyone. */
  clientCa?: string;
  kubeletVersion?: string;
  runtimeVersion?: string;
  logger?: RuntimeLogger;
  /** Restart back-off (Kubernetes' 10 s to 300 s by default; tests shorten it). */
  restartBackoff?: { initialMs?: number; maxMs?: number };
  leaseIntervalMs?: number;
  /** Run the service proxy (default true): keep the service table, and the proxy process serving it. */
  serviceProxy?: boolean;
  /**
   * Run the log relay (default true): containers' output goes through it into
   * CRI-format log files, each line with its time; off, containers append to
   * their files directly (no timestamps, `kubectl logs --since` refused).
   */
  logRelay?: boolean;
  /** The command that runs `setpoint`, for the service proxy and log relay processes (default: this package's bin). */
  setpointCommand?: string[];
  /** Where the cgroup file systems are (default /sys/fs/cgroup): containers' memory and CPU limits. */
  cgroupRoot?: string;
  /** How often volumes are brought up to date with their sources (default VOLUME_SYNC_MS). */
  volumeSyncMs?: number;
  /** The clock that decides when a projected token is renewed (ms; tests move it on). */
  clock?: () => number;
  /**
   * "namespaces": each Pod in a network namespace of its own (addresses 10.N.x.y)
   * and each container in a mount namespace with its volumes at their mountPaths
   * (root on Linux; the constructor throws IsolationUnavailableError elsewhere).
   * Default "none".
   */
  isolation?: IsolationMode;
  /** The Services' cluster IP range the isolated Pods route to the host (default 127.100.0.0/16). */
  serviceClusterIPRange?: string;
}

type TokenProjection = {
  audience?: string;
  expirationSeconds?: number;
  path: string;
};

/** The key of a Pod's token: its uid, account, audience and validity. */
function tokenKey(pod: Pod, p: TokenProjection): string {
  const sa = pod.spec?.serviceAccountName || "default";
  return `${pod.metadata.uid}|${sa}|${p.audience ?? ""}|${p.expirationSeconds ?? DEFAULT_TOKEN_SECONDS}`;
}

/** The token projections of a Pod's volumes. */
function tokenProjections(pod: Pod): TokenProjection[] {
  const out: TokenProjection[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    for (const s of v.projected?.sources ?? []) {
      if (s.serviceAccountToken) out.push(s.serviceAccountToken);
    }
  }
  return out;
}

interface SecretObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  stringData?: Record<string, string>;
}

const NOOP: RuntimeLogger = { debug() {}, info() {}, warn() {}, error() {} };

export class Agent {
  readonly images: ImageStore;
  readonly workers = new Map<string, PodWorker>();
  private readonly log: RuntimeLogger;
  private readonly addresses: PodAddresses;
  private readonly state: AgentStateData;
  private readonly stateFile: StateFile;
  private readonly informer: Informer<Pod>;
  private readonly abort = new AbortController();
  private readonly restartBackoff: Backoff;
  private readonly pullBackoff = new Backoff();
  private readonly dirty = new Set<string>();
  private readonly written = new Map<string, string>();
  private readonly finishing = new Map<string, Promise<void>>();
  private statusTimer: NodeJS.Timeout | undefined;
  private readonly writing = new Map<string, Promise<void>>();
  private readonly retrying = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private housekeeping: NodeJS.Timeout | undefined;
  private nodeTimer: NodeJS.Timeout | undefined;
  private volumeTimer: NodeJS.Timeout | undefined;
  private volumeSyncing = false;
  private server: Server | undefined;
  private secureServer: HttpsServer | undefined;
  /** Commands run by `kubectl exec`, ended with their Pod. */
  private readonly execSessions = new ExecSessions();
  private statusPort = 0;
  private nodeUid: string | undefined;
  private lastNodeReport = 0;
  private lease: Promise<void> | undefined;
  private identity: NodeIdentity;
  private readonly events: PodEventRecorder;
  /** The service table, unless the service proxy is switched off. */
  readonly services: ServiceTableSync | undefined;
  /** The service proxy process, unless switched off. */
  readonly proxy: ProxyProcess | undefined;
  /** The log relay process and the agent's side of it, unless switched off. */
  readonly logRelay: { process: LogRelayProcess; client: LogRelayClient } | undefined;
  /** Status writes done (for tests and benchmarks). */
  statusWrites = 0;
  /** Containers' cgroups: whether (and how) memory and CPU limits are enforced. */
  readonly cgroups: Cgroups;
  /** The isolated mode's sandboxes, when it is on. */
  readonly isolation: Isolation | undefined;

  constructor(private readonly opts: AgentOptions) {
    // First: where the isolated mode cannot run, nothing else is made.
    this.isolation =
      opts.isolation === "namespaces"
        ? Isolation.open(opts.podRange ?? DEFAULT_POD_RANGE, opts.serviceClusterIPRange)
        : undefined;
    this.log = opts.logger ?? NOOP;
    this.images = new ImageStore(opts.imageDir ?? join(opts.dataDir, "images"));
    this.addresses = new PodAddresses(opts.podRange, this.isolation ? ISOLATED_POD_NET : undefined);
    this.restartBackoff = new Backoff(opts.restartBackoff);
    this.cgroups = new Cgroups({ root: opts.cgroupRoot, nodeName: opts.nodeName });
    const loaded = StateFile.load(join(opts.dataDir, "state.json"));
    if (loaded.problem) this.log.warn({}, loaded.problem);
    this.state = loaded.state ?? emptyState(opts.nodeName);
    this.stateFile = new StateFile(join(opts.dataDir, "state.json"), () => this.state);
    this.identity = {
      name: opts.nodeName,
      address: opts.address ?? "127.0.0.1",
      port: 0,
      runtimeVersion: opts.runtimeVersion ?? "setpoint://0.1.0",
      kubeletVersion: opts.kubeletVersion ?? "v1.32.0",
      dataDir: opts.dataDir,
    };
    this.events = new PodEventRecorder(opts.client, opts.nodeName);
    if (opts.serviceProxy !== false) {
      this.services = new ServiceTableSync({
        client: opts.client,
        dataDir: opts.dataDir,
        logger: this.log,
      });
      this.proxy = new ProxyProcess({
        dataDir: opts.dataDir,
        nodeAddress: this.identity.address,
        logger: this.log,
        command: opts.setpointCommand,
      });
    }
    if (opts.logRelay !== false) {
      this.logRelay = {
        process: new LogRelayProcess({
          dataDir: opts.dataDir,
          logger: this.log,
          command: opts.setpointCommand,
        }),
        client: new LogRelayClient(opts.dataDir),
      };
    }
    this.informer = new Informer<Pod>(opts.client, POD, {
      fieldSelector: `spec.nodeName=${opts.nodeName}`,
      backoffInitialMs: 200,
      backoffMaxMs: 7_000,
      logger: this.log,
    });
  }

  get nodeName(): string {
    return this.opts.nodeName;
  }

  /** The port of the agent's local status endpoint (/healthz, /pods). */
  get port(): number {
    return this.statusPort;
  }

  /** The port of the authenticated endpoint (`/containerLogs`), as the Node publishes it. */
  get securePort(): number {
    return this.identity.port;
  }

  private get hostIP(): string {
    return this.identity.address;
  }

  private readonly sources: VolumeSources = {
    configMap: (ns, name) => this.state.configMaps[`${ns}/${name}`],
    secret: (ns, name) => this.state.secrets[`${ns}/${name}`],
    services: (ns, links) => serviceEnv(this.services?.table, ns, links),
    binary: (kind, ns, name) => {
      const b64 = this.state.binaryData[`${kind}/${ns}/${name}`];
      if (!b64) return undefined;
      return Object.fromEntries(Object.entries(b64).map(([k, v]) => [k, Buffer.from(v, "base64")]));
    },
    token: (pod, _volume, p) => {
      const t = this.state.tokens[tokenKey(pod, p)];
      // An expired token is still written during an outage: nothing better can be had.
      return t?.token;
    },
  };

  private now(): number {
    return this.opts.clock?.() ?? Date.now();
  }

  /** Whether a token is due for renewal: 80% of its validity passed, or older than a day. */
  private tokenDue(t: StoredToken | undefined): boolean {
    if (!t) return true;
    const now = this.now();
    const ttl = t.expiresAt - t.issuedAt;
    return now >= t.issuedAt + TOKEN_RENEW_FRACTION * ttl || now - t.issuedAt > TOKEN_MAX_AGE_MS;
  }

  /**
   * Requests (TokenRequest, bound to the Pod) the tokens of a Pod's projected
   * volumes that it lacks or that are due for renewal; a failed request keeps the
   * token it had.
   */
  private async refreshTokens(pod: Pod): Promise<void> {
    const ns = pod.metadata.namespace ?? "default";
    const sa = pod.spec?.serviceAccountName || "default";
    await Promise.all(
      tokenProjections(pod).map(async (p) => {
        const key = tokenKey(pod, p);
        if (!this.tokenDue(this.state.tokens[key])) return;
        const seconds = p.expirationSeconds ?? DEFAULT_TOKEN_SECONDS;
        try {
          const issuedAt = this.now();
          const res = (await this.opts.client.create(
            {
              apiVersion: "authentication.k8s.io/v1",
              kind: "TokenRequest",
              metadata: { name: sa, namespace: ns },
              spec: {
                ...(p.audience ? { audiences: [p.audience] } : {}),
                expirationSeconds: seconds,
                boundObjectRef: {
                  apiVersion: "v1",
                  kind: "Pod",
                  name: pod.metadata.name,
                  uid: pod.metadata.uid,
                },
              },
            } as KubeObject,
            { subresource: "token", parentType: SERVICEACCOUNT },
          )) as KubeObject & { status?: { token?: string; expirationTimestamp?: string } };
          const token = res.status?.token;
          if (!token) return;
          const expires = Date.parse(res.status?.expirationTimestamp ?? "");
          // Validity as granted, on the agent's clock.
          const ttl = Number.isNaN(expires) ? seconds * 1000 : expires - Date.now();
          this.state.tokens[key] = { token, issuedAt, expiresAt: issuedAt + ttl };
          this.stateFile.schedule();
        } catch (err) {
          this.log.debug({ err: String(err), key }, "token request failed; keeping the token");
        }
      }),
    );
  }

  /** Reads the ConfigMaps and Secrets a Pod uses; keeps the last known data when the apiserver is away. */
  private async refreshSources(pod: Pod): Promise<void> {
    const { configMaps, secrets } = referencedSources(pod);
    await Promise.all([this.readSources(configMaps, secrets), this.refreshTokens(pod)]);
  }

  /**
   * Reads again the ConfigMaps and Secrets of the running Pods' volumes (each
   * once), then rewrites each Pod's volume files that changed.
   */
  private async syncVolumes(): Promise<void> {
    if (this.volumeSyncing) return;
    this.volumeSyncing = true;
    try {
      const configMaps = new Set<string>();
      const secrets = new Set<string>();
      const withVolumes = [...this.workers.values()].filter(
        (w) => w.record.pod.spec?.volumes?.length && !w.record.terminating && !w.record.stopped,
      );
      for (const w of withVolumes) {
        const refs = referencedSources(w.record.pod);
        for (const k of refs.configMaps) configMaps.add(k);
        for (const k of refs.secrets) secrets.add(k);
      }
      await Promise.all([
        configMaps.size || secrets.size
          ? this.readSources([...configMaps], [...secrets])
          : undefined,
        ...withVolumes.map((w) => this.refreshTokens(w.record.pod)),
      ]);
      for (const w of withVolumes) w.refreshVolumes();
    } finally {
      this.volumeSyncing = false;
    }
  }

  private async readSources(configMaps: string[], secrets: string[]): Promise<void> {
    const read = async (kind: typeof CONFIGMAP | typeof SECRET, key: string) => {
      const [ns, name] = key.split("/");
      const table = kind === CONFIGMAP ? this.state.configMaps : this.state.secrets;
      const binKey = `${kind === CONFIGMAP ? "configmap" : "secret"}/${key}`;
      try {
        const obj = (await this.opts.client.get(kind, name, ns)) as unknown as SecretObject;
        const data: Record<string, string> = {};
        // Bytes that are not UTF-8 text (a Secret's value, a ConfigMap's binaryData), base64.
        const binary: Record<string, string> = { ...(obj.binaryData ?? {}) };
        for (const [k, v] of Object.entries(obj.data ?? {})) {
          if (kind !== SECRET) {
            data[k] = v;
            continue;
          }
          const bytes = Buffer.from(v, "base64");
          data[k] = bytes.toString("utf8");
          if (!Buffer.from(data[k], "utf8").equals(bytes)) binary[k] = v;
        }
        table[key] = data;
        if (Object.keys(binary).length) this.state.binaryData[binKey] = binary;
        else delete this.state.binaryData[binKey];
      } catch (err) {
        if (isNotFound(err)) {
          delete table[key];
          delete this.state.binaryData[binKey];
        }
      }
    };
    await Promise.all([
      ...configMaps.map((k) => read(CONFIGMAP, k)),
      ...secrets.map((k) => read(SECRET, k)),
    ]);
    this.stateFile.schedule();
  }

  private newWorker(record: PodRecord): PodWorker {
    const node = machineResources(this.opts.dataDir);
    const worker = new PodWorker(record, {
      images: this.images,
      sources: this.sources,
      refreshSources: (pod) => this.refreshSources(pod),
      node,
      dataDir: this.opts.dataDir,
      cgroups: this.cgroups,
      ...(this.isolation ? { isolation: this.isolation } : {}),
      ...(this.logRelay ? { logRelay: this.logRelay.client } : {}),
      restartBackoff: this.restartBackoff,
      pullBackoff: this.pullBackoff,
      onChange: (rec) => this.changed(rec.uid),
      onEvent: (rec, type, reason, message) => {
        this.log.info(
          { pod: `${rec.pod.metadata.namespace}/${rec.pod.metadata.name}`, type, reason },
          message,
        );
        this.events.record(rec.pod, type, reason, message);
      },
    });
    this.workers.set(record.uid, worker);
    this.state.pods[record.uid] = record;
    this.addresses.take(record.podIP);
    return worker;
  }

  private changed(uid: string): void {
    this.stateFile.schedule();
    this.dirty.add(uid);
    this.scheduleStatus(10);
  }

  /**
   * Starts: Pods from disk first (adopted or restarted, no apiserver needed), then
   * the endpoint, the Pod watch, the Node and its Lease. Resolves without waiting
   * for the apiserver.
   */
  async start(): Promise<void> {
    try {
      importBuiltinImages(this.images);
    } catch (err) {
      this.log.warn({ err: String(err) }, "could not import the built-in images");
    }
    const limits = this.cgroups.support;
    if (limits.enforced) {
      this.log.info({ cgroup: limits.version }, `resource limits are enforced: ${limits.detail}`);
    } else {
      this.log.warn({}, `resource limits are not enforced: ${limits.detail}`);
    }
    if (this.isolation) {
      // The bridge before any Pod; sandboxes no Pod on disk owns are removed.
      await this.isolation.start();
      const keep = new Set<string>();
      for (const r of Object.values(this.state.pods)) if (r.sandbox) keep.add(r.sandbox.netns);
      const swept = await this.isolation.sweep(keep);
      this.log.info(
        { bridge: this.isolation.network.bridge, pods: this.isolation.network.cidr, swept },
        "pods are isolated in network and mount namespaces",
      );
    }
    // Services first: a container restarted from disk gets its Service variables.
    // The proxy process is adopted if it runs, else started on the table on disk.
    this.services?.start();
    this.proxy?.ensure();
    // The log relay is adopted if it runs (it kept writing the logs meanwhile), else started.
    this.logRelay?.process.ensure();
    let adopted = 0;
    let gone = 0;
    for (const record of Object.values(this.state.pods)) {
      const worker = this.newWorker(record);
      if (record.stopped || record.terminating) {
        void this.finish(record.uid);
        continue;
      }
      const r = worker.adopt();
      adopted += r.adopted;
      gone += r.gone;
    }
    this.log.info(
      { pods: this.workers.size, adopted, restarted: gone },
      "started from the state on disk",
    );
    // Cgroups of runs that ended while no agent ran; adopted processes keep theirs.
    const keep = new Set<string>();
    for (const record of Object.values(this.state.pods)) {
      for (const c of [...record.initContainers, ...record.containers]) {
        if (c.process?.cgroup) keep.add(c.process.cgroup);
      }
    }
    this.cgroups.sweep(keep);
    this.stateFile.flush();
    await this.listen();
    await this.listenSecure();
    this.informer.addEventHandler({
      onAdd: (pod) => this.reconcile(pod),
      onUpdate: (_old, pod) => this.reconcile(pod),
      onDelete: (pod) => this.gone(pod),
    });
    this.informer.start(this.abort.signal);
    this.housekeeping = setInterval(() => this.houseKeep(), HOUSEKEEPING_MS);
    this.housekeeping.unref();
    this.volumeTimer = setInterval(
      () => void this.syncVolumes().catch(() => {}),
      this.opts.volumeSyncMs ?? VOLUME_SYNC_MS,
    );
    this.volumeTimer.unref();
    void this.syncNode();
  }

  /** Starts the Lease heartbeat (once the Node is registered, so the Lease can name it its owner). */
  private startLease(): void {
    if (this.lease || this.abort.signal.aborted) return;
    this.lease = runLease(this.opts.client, this.opts.nodeName, this.abort.signal, {
      intervalMs: this.opts.leaseIntervalMs,
      nodeUid: () => this.nodeUid,
      onError: (err) => this.log.debug({ err: String(err) }, "lease renewal failed"),
    });
  }

  /** Resolves once the Pod informer has listed (the apiserver answered). */
  waitForSync(): Promise<void> {
    return this.informer.waitForSync(this.abort.signal);
  }

  private listen(): Promise<void> {
    const server = createServer((req, res) => {
      if (req.url === "/healthz") {
        res.end("ok");
        return;
      }
      if (req.url === "/pods") {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(this.summary()));
        return;
      }
      res.statusCode = 404;
      res.end();
    });
    this.server = server;
    return new Promise((done, fail) => {
      server.once("error", fail);
      server.listen(this.opts.listenPort ?? 0, this.opts.listenHost ?? "127.0.0.1", () => {
        const addr = server.address();
        this.statusPort = typeof addr === "object" && addr ? addr.port : 0;
        done();
      });
    });
  }

  /** Starts the authenticated endpoint; its port goes into the Node's daemonEndpoints. */
  private async listenSecure(): Promise<void> {
    const host = this.opts.secureListenHost ?? "127.0.0.1";
    const cert = await loadOrCreateServingCert(this.opts.dataDir, this.opts.nodeName, [
      this.identity.address,
      host,
      "localhost",
      "127.0.0.1",
    ]);
    const server = createEndpointServer({
      cert,
      clientCa: this.opts.clientCa,
      dataDir: this.opts.dataDir,
      pod: (namespace, name) => {
        for (const w of this.workers.values()) {
          const meta = w.record.pod.metadata;
          if (meta.namespace === namespace && meta.name === name) return w.record;
        }
        return undefined;
      },
      execContext: (uid, container) => this.workers.get(uid)?.execContext(container),
      sessions: this.execSessions,
    });
    this.secureServer = server;
    await new Promise<void>((done, fail) => {
      server.once("error", fail);
      server.listen(this.opts.secureListenPort ?? 0, host, () => {
        server.off("error", fail);
        const addr = server.address();
        this.identity = {
          ...this.identity,
          port: typeof addr === "object" && addr ? addr.port : 0,
        };
        done();
      });
    });
  }

  /** What runs: each Pod with its address, phase and processes. */
  summary(): {
    namespace: string;
    name: string;
    uid: string;
    podIP: string;
    phase: string;
    containers: { name: string; pid?: number; restartCount: number; ready: boolean }[];
  }[] {
    return [...this.workers.values()].map((w) => {
      const r = w.record;
      return {
        namespace: r.pod.metadata.namespace ?? "",
        name: r.pod.metadata.name ?? "",
        uid: r.uid,
        podIP: r.podIP,
        phase: podStatus(r, this.hostIP).phase ?? "",
        containers: [...r.initContainers, ...r.containers].map((c) => ({
          name: c.name,
          ...(c.process ? { pid: c.process.pid } : {}),
          restartCount: c.restartCount,
          ready: c.ready,
        })),
      };
    });
  }

  private reconcile(pod: Pod): void {
    const uid = pod.metadata.uid ?? "";
    const worker = this.workers.get(uid);
    if (!worker) {
      if (pod.metadata.deletionTimestamp) {
        void this.deleteObject(pod);
        return;
      }
      if (pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed") return;
      const record = newPodRecord(structuredClone(pod) as Pod, this.addresses.allocate());
      this.newWorker(record).kick();
      this.changed(uid);
      return;
    }
    if (worker.record.stopped && !pod.metadata.deletionTimestamp) return;
    worker.update(structuredClone(pod) as Pod);
    // Labels and annotations in downwardAPI files follow the Pod at once.
    worker.refreshVolumes();
    if (pod.metadata.deletionTimestamp) void this.finish(uid);
    else this.dirty.add(uid);
    this.scheduleStatus(10);
  }

  /** A Pod gone from the apiserver: stop it, forget it. */
  private gone(pod: Pod): void {
    const uid = pod.metadata.uid ?? "";
    if (this.workers.has(uid)) void this.finish(uid, false);
  }

  /**
   * Stops a Pod's processes, reports its final status, deletes its object (when
   * `deleteObject`), and forgets it. Retried by housekeeping while the apiserver is away.
   */
  private finish(uid: string, deleteObject = true): Promise<void> {
    const running = this.finishing.get(uid);
    if (running) return running;
    const p = (async () => {
      const worker = this.workers.get(uid);
      if (!worker) return;
      if (!worker.record.stopped) await worker.terminate();
      this.execSessions.stopPod(uid);
      await this.removeSandbox(worker.record);
      if (deleteObject && this.informer.getByKey(keyOf(worker.record.pod))) {
        await this.writing.get(uid);
        await this.writeStatus(uid);
        const ok = await this.deleteObject(worker.record.pod);
        if (!ok) return;
      }
      this.forget(uid);
    })().finally(() => this.finishing.delete(uid));
    this.finishing.set(uid, p);
    return p;
  }

  /** Removes a stopped Pod's sandbox (isolated mode); its mount points stay while another Pod uses them. */
  private async removeSandbox(record: PodRecord): Promise<void> {
    const sandbox = record.sandbox;
    if (!this.isolation || !sandbox || !record.stopped) return;
    const others = [...this.workers.values()]
      .filter((w) => w.record !== record && w.record.sandbox)
      .map((w) => w.record.sandbox as NonNullable<PodRecord["sandbox"]>);
    try {
      await this.isolation.remove(sandbox, others);
      record.sandbox = undefined;
      this.stateFile.schedule();
    } catch (err) {
      this.log.warn({ err: String(err), pod: record.uid }, "could not remove the pod's sandbox");
    }
  }

  private forget(uid: string): void {
    const worker = this.workers.get(uid);
    if (!worker) return;
    worker.close();
    if (worker.record.stopped) tearDownVolumes(worker.record.pod, worker.podDir);
    for (const key of Object.keys(this.state.tokens)) {
      if (key.startsWith(`${uid}|`)) delete this.state.tokens[key];
    }
    this.workers.delete(uid);
    this.addresses.release(worker.record.podIP);
    delete this.state.pods[uid];
    this.dirty.delete(uid);
    this.written.delete(uid);
    this.stateFile.schedule();
  }

  /** Deletes a Pod's object as the kubelet does once it stopped: grace 0, on its uid. */
  private async deleteObject(pod: Pod): Promise<boolean> {
    try {
      await this.opts.client.delete(POD, pod.metadata.name ?? "", pod.metadata.namespace, {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid },
      });
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return true;
      this.log.debug({ err: String(err) }, "deleting a stopped pod failed; will retry");
      return false;
    }
  }

  /** Compares the Pods run with the Pods listed, retries what failed, rotates logs. */
  private houseKeep(): void {
    if (this.informer.hasSynced()) {
      for (const [uid, worker] of this.workers) {
        const listed = this.informer.getByKey(keyOf(worker.record.pod));
        if (!listed || listed.metadata.uid !== uid) void this.finish(uid, false);
        else if (worker.record.stopped || worker.record.terminating) void this.finish(uid);
      }
    }
    for (const w of this.workers.values()) w.rotateLogs();
    this.proxy?.ensure();
    if (this.logRelay?.process.ensure() === "started") this.logRelay.client.retry();
    if (this.dirty.size) this.scheduleStatus(0);
  }

  private scheduleStatus(delayMs: number): void {
    if (this.statusTimer || this.abort.signal.aborted) return;
    this.statusTimer = setTimeout(() => {
      this.statusTimer = undefined;
      this.flushStatus();
    }, delayMs);
  }

  /**
   * Starts the status writes of the changed Pods: at most STATUS_WRITERS at once and
   * one per Pod at a time (two writes of one Pod's status could land out of order);
   * a change during a write is written after it; a failed write is retried later.
   */
  private flushStatus(): void {
    for (const uid of [...this.dirty]) {
      if (this.writing.has(uid) || this.writing.size >= STATUS_WRITERS) continue;
      this.dirty.delete(uid);
      const write = this.writeStatus(uid)
        .then((ok) => {
          if (!ok) this.retryLater(uid);
        })
        .finally(() => {
          this.writing.delete(uid);
          if (this.dirty.size) this.scheduleStatus(0);
        });
      this.writing.set(uid, write);
    }
  }

  private retryLater(uid: string): void {
    this.retrying.add(uid);
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      for (const u of this.retrying) this.dirty.add(u);
      this.retrying.clear();
      this.scheduleStatus(0);
    }, WRITE_RETRY_MS);
    this.retryTimer.unref();
  }

  /** Writes a Pod's status when it differs from the server's; false when the write failed. */
  private async writeStatus(uid: string): Promise<boolean> {
    const worker = this.workers.get(uid);
    if (!worker) return true;
    if (!this.informer.hasSynced()) return false;
    const server = this.informer.getByKey(keyOf(worker.record.pod));
    if (!server || server.metadata.uid !== uid) return true;
    const status = podStatus(worker.record, this.hostIP, server.status);
    const text = canonicalJson(status);
    if (text === canonicalJson(server.status ?? {}) || text === this.written.get(uid)) return true;
    try {
      await this.opts.client.patch(
        POD,
        server.metadata.name ?? "",
        server.metadata.namespace,
        { metadata: { uid }, status },
        { type: "merge", subresource: "status" },
      );
      this.statusWrites++;
      this.written.set(uid, text);
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return true;
      this.log.debug({ err: String(err) }, "status write failed; will retry");
      return false;
    }
  }

  /** Registers the Node, then keeps its status current; retries while the apiserver is away. */
  private async syncNode(retryMs = 200): Promise<void> {
    if (this.abort.signal.aborted) return;
    let next = NODE_STATUS_CHECK_MS;
    try {
      await this.writeNode();
      this.startLease();
    } catch (err) {
      this.log.debug({ err: String(err) }, "node registration failed; will retry");
      next = retryMs;
      retryMs = Math.min(retryMs * 2, 7_000);
    }
    if (next === NODE_STATUS_CHECK_MS) retryMs = 200;
    if (!this.abort.signal.aborted) {
      this.nodeTimer = setTimeout(() => void this.syncNode(retryMs), next);
      this.nodeTimer.unref();
    }
  }

  private async writeNode(): Promise<void> {
    const client = this.opts.client;
    let node: Node | undefined;
    try {
      node = await client.get<Node>(NODE, this.opts.nodeName);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!node) {
      node = await client.create<Node>(nodeObject(this.identity));
      this.log.info({ node: this.opts.nodeName }, "registered the node");
    }
    if (this.nodeUid !== node.metadata.uid) {
      const limits = this.cgroups.support;
      if (limits.enforced) {
        this.events.recordNode(
          node.metadata.uid,
          "Normal",
          "ResourceLimitsEnforced",
          `Containers' memory and CPU limits are enforced with ${limits.detail}`,
        );
      } else {
        this.events.recordNode(
          node.metadata.uid,
          "Warning",
          "ResourceLimitsNotEnforced",
          `Containers' memory and CPU limits are not enforced: ${limits.detail}`,
        );
      }
    }
    this.nodeUid = node.metadata.uid;
    const previous = node.status;
    const status = nodeStatus(this.identity, rfc3339(), previous);
    const essentials = (s: typeof status | undefined) =>
      canonicalJson({
        conditions: (s?.conditions ?? []).map((c) => [c.type, c.status, c.reason]),
        capacity: s?.capacity,
        addresses: s?.addresses,
        daemonEndpoints: s?.daemonEndpoints,
      });
    if (
      essentials(status) === essentials(previous) &&
      Date.now() - this.lastNodeReport < NODE_STATUS_REPORT_MS
    ) {
      return;
    }
    await client.updateStatus<Node>({ ...node, status });
    this.lastNodeReport = Date.now();
  }

  /**
   * Stops the agent. By default the Pods and the service proxy keep running
   * (their state is on disk for the next agent); with `stopPods` every Pod and
   * the proxy are stopped first.
   */
  async stop(opts: { stopPods?: boolean } = {}): Promise<void> {
    if (opts.stopPods) {
      await Promise.all([...this.workers.values()].map((w) => w.terminate()));
    }
    this.abort.abort();
    if (this.statusTimer) clearTimeout(this.statusTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.housekeeping) clearInterval(this.housekeeping);
    if (this.volumeTimer) clearInterval(this.volumeTimer);
    if (this.nodeTimer) clearTimeout(this.nodeTimer);
    for (const w of this.workers.values()) {
      await w.settled();
      w.close();
    }
    if (opts.stopPods) {
      for (const w of this.workers.values()) await this.removeSandbox(w.record);
      await this.isolation?.stop();
      this.state.pods = {};
      this.cgroups.sweep(new Set());
      this.cgroups.removeParents();
    }
    this.stateFile.flush();
    await this.services?.stop();
    if (opts.stopPods) {
      await this.proxy?.stop();
      // The relay writes what the stopped containers left in their pipes, then goes.
      await waitForPipesRelayed(this.opts.dataDir, 2_000);
      await this.logRelay?.process.stop();
    }
    this.logRelay?.client.close();
    await this.lease;
    const secure = this.secureServer;
    this.execSessions.stopAll();
    secure?.closeAllConnections();
    await new Promise<void>((done) => (secure ? secure.close(() => done()) : done()));
    await new Promise<void>((done) => (this.server ? this.server.close(() => done()) : done()));
    this.server?.closeAllConnections();
  }
}

function keyOf(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}
