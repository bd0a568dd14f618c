/**
 * Throwaway etcd servers for tests: each has its own temporary data dir and free ports
 * on 127.0.0.1, is waited for until healthy, and is killed when the test process exits
 * even if a test forgot to. Suites that need etcd declare themselves with
 * `describeWithEtcd` (or `etcdOrSkip()`): without the etcd binary they are skipped with
 * a hint on how to install it, except in CI (CI=true), where they fail instead.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { describe, it } from "vitest";
import { ETCD_MAX_REQUEST_BYTES } from "../../src/storage/etcd/index.ts";

/** How to install etcd where it is missing (Debian/Ubuntu). */
export const ETCD_INSTALL_HINT = "apt-get install etcd-server";
/** Longest wait for a started etcd (or cluster) to report healthy. */
export const ETCD_START_TIMEOUT_MS = 30_000;
/** Longest wait for etcd to exit after SIGTERM before it gets SIGKILL. */
export const ETCD_STOP_TIMEOUT_MS = 10_000;
/** Interval between health checks while etcd starts. */
const HEALTH_POLL_MS = 50;
/** Lines of etcd's stderr kept to explain a failed start. */
const LOG_TAIL_LINES = 40;

/** The etcd binary: $ETCD_BIN, else `etcd` on PATH; null when there is none. */
export function etcdBinary(): string | null {
  const candidates = process.env.ETCD_BIN
    ? [process.env.ETCD_BIN]
    : [
        ...(process.env.PATH ?? "").split(delimiter).filter(Boolean),
        "/usr/bin",
        "/usr/local/bin",
      ].map((dir) => join(dir, "etcd"));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here
    }
  }
  return null;
}

type DescribeLike = (name: string, fn: () => void) => void;

/**
 * The `describe` to declare an etcd suite with: vitest's own when etcd is installed;
 * when it is not, one that skips the suite with an install hint, or, in CI
 * (CI=true), one that fails it, so CI never passes by skipping.
 */
export function etcdOrSkip(): DescribeLike {
  if (etcdBinary()) return describe;
  const why = `etcd binary not found ($ETCD_BIN or etcd on PATH); install it with: ${ETCD_INSTALL_HINT}`;
  if (process.env.CI === "true") {
    return (name) =>
      describe(name, () => {
        it("has etcd installed", () => {
          throw new Error(`${why} (CI=true: etcd suites must run, not skip)`);
        });
      });
  }
  return (name, fn) => {
    console.warn(`skipping "${name}": ${why}`);
    describe.skip(`${name} (skipped: ${why})`, fn);
  };
}

/** `describe` for a suite that needs a real etcd; see etcdOrSkip. */
export function describeWithEtcd(name: string, fn: () => void): void {
  etcdOrSkip()(name, fn);
}

/** A free TCP port on 127.0.0.1 (free when asked; etcd binds it right after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr && typeof addr === "object") resolve(addr.port);
        else reject(new Error("no port"));
      });
    });
  });
}

/** Every etcd child still running, killed when the test process exits. */
const live = new Set<ChildProcess>();
/** Data dirs to remove when the test process exits. */
const dirs = new Set<string>();
process.on("exit", () => {
  for (const child of live) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface StartEtcdOptions {
  /** Member name (default "etcd"). */
  name?: string;
  /** Extra command-line flags for etcd. */
  extraArgs?: string[];
}

interface MemberSpec {
  name: string;
  clientPort: number;
  peerPort: number;
  dataDir: string;
  initialCluster: string;
  clusterToken: string;
  extraArgs: string[];
}

/** One etcd server process, restartable on the same data dir and ports. */
export class EtcdProcess {
  /** The client URL, as a one-element endpoint list. */
  readonly endpoints: string[];
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private log: string[] = [];

  constructor(private readonly spec: MemberSpec) {
    this.endpoints = [this.clientUrl];
  }

  get name(): string {
    return this.spec.name;
  }
  get clientUrl(): string {
    return `http://127.0.0.1:${this.spec.clientPort}`;
  }
  get peerUrl(): string {
    return `http://127.0.0.1:${this.spec.peerPort}`;
  }
  get dataDir(): string {
    return this.spec.dataDir;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }
  get running(): boolean {
    return this.child !== null;
  }

  /** Starts the process (if not running) without waiting for it to be healthy. */
  spawn(): void {
    if (this.child) return;
    const s = this.spec;
    const bin = etcdBinary();
    if (!bin) throw new Error(`etcd binary not found; install it with: ${ETCD_INSTALL_HINT}`);
    const args = [
      `--name=${s.name}`,
      `--data-dir=${join(s.dataDir, "data")}`,
      `--listen-client-urls=${this.clientUrl}`,
      `--advertise-client-urls=${this.clientUrl}`,
      `--listen-peer-urls=${this.peerUrl}`,
      `--initial-advertise-peer-urls=${this.peerUrl}`,
      `--initial-cluster=${s.initialCluster}`,
      `--initial-cluster-token=${s.clusterToken}`,
      "--initial-cluster-state=new",
      `--max-request-bytes=${ETCD_MAX_REQUEST_BYTES}`,
      "--logger=zap",
      "--log-level=warn",
      ...s.extraArgs,
    ];
    const child = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    this.log = [];
    live.add(child);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      this.log.push(...chunk.split("\n").filter(Boolean));
      if (this.log.length > LOG_TAIL_LINES) this.log.splice(0, this.log.length - LOG_TAIL_LINES);
    });
    this.exited = new Promise((resolve) => {
      child.once("exit", () => {
        live.delete(child);
        if (this.child === child) this.child = null;
        resolve();
      });
    });
  }

  /** Resolves once etcd answers its health check; rejects if it exits or takes too long. */
  async waitHealthy(timeoutMs = ETCD_START_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.child)
        throw new Error(`etcd ${this.name} exited while starting:\n${this.logTail()}`);
      try {
        const res = await fetch(`${this.clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
        const body = (await res.json()) as { health?: string };
        if (body.health === "true") return;
      } catch {
        // not up yet
      }
      await sleep(HEALTH_POLL_MS);
    }
    throw new Error(`etcd ${this.name} not healthy after ${timeoutMs}ms:\n${this.logTail()}`);
  }

  /** Starts the process and waits until it is healthy. */
  async start(): Promise<void> {
    this.spawn();
    await this.waitHealthy();
  }

  /** Stops etcd with SIGTERM (SIGKILL if it lingers); the data dir is kept for restart(). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), ETCD_STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }

  /** Kills etcd with SIGKILL, as a crash would; the data dir is kept for restart(). */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill("SIGKILL");
    await this.exited;
  }

  /** Stops etcd if it runs, then starts it again on the same data dir and ports. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Stops etcd and deletes its data dir. */
  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.spec.dataDir, { recursive: true, force: true });
    dirs.delete(this.spec.dataDir);
  }

  /** The last lines etcd wrote to stderr. */
  logTail(): string {
    return this.log.join("\n");
  }
}

async function memberSpecs(names: string[], extraArgs: string[]): Promise<MemberSpec[]> {
  const ports = await Promise.all(names.map(async () => [await freePort(), await freePort()]));
  const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i][1]}`).join(",");
  const clusterToken = `setpoint-test-${randomBytes(4).toString("hex")}`;
  return names.map((name, i) => {
    const dataDir = mkdtempSync(join(tmpdir(), `setpoint-etcd-${name}-`));
    dirs.add(dataDir);
    return {
      name,
      clientPort: ports[i][0],
      peerPort: ports[i][1],
      dataDir,
      initialCluster,
      clusterToken,
      extraArgs,
    };
  });
}

/** Times a start is tried again on other ports when one was taken between picking and binding. */
const PORT_RACE_ATTEMPTS = 3;

const portTaken = (err: unknown): boolean =>
  err instanceof Error && err.message.includes("address already in use");

/** Starts a one-member etcd on free ports with a fresh data dir, and waits until it is healthy. */
export async function startEtcd(opts: StartEtcdOptions = {}): Promise<EtcdProcess> {
  for (let attempt = 1; ; attempt++) {
    const [spec] = await memberSpecs([opts.name ?? "etcd"], opts.extraArgs ?? []);
    const proc = new EtcdProcess(spec);
    try {
      await proc.start();
      return proc;
    } catch (err) {
      await proc.destroy();
      // A free port can be taken by another process before etcd binds it.
      if (!portTaken(err) || attempt >= PORT_RACE_ATTEMPTS) throw err;
    }
  }
}

/** A throwaway etcd cluster of several members. */
export interface EtcdCluster {
  members: EtcdProcess[];
  /** Every member's client URL. */
  endpoints: string[];
  /** Kills every member and deletes their data dirs. */
  destroy(): Promise<void>;
}

/** Starts an etcd cluster of `size` members (default 3) and waits until all are healthy. */
export async function startEtcdCluster(size = 3, extraArgs: string[] = []): Promise<EtcdCluster> {
  const names = Array.from({ length: size }, (_, i) => `m${i}`);
  for (let attempt = 1; ; attempt++) {
    const members = (await memberSpecs(names, extraArgs)).map((s) => new EtcdProcess(s));
    const destroy = async () => {
      await Promise.all(members.map((m) => m.destroy()));
    };
    try {
      for (const m of members) m.spawn();
      await Promise.all(members.map((m) => m.waitHealthy()));
      return { members, endpoints: members.map((m) => m.clientUrl), destroy };
    } catch (err) {
      await destroy();
      if (!portTaken(err) || attempt >= PORT_RACE_ATTEMPTS) throw err;
    }
  }
}

/**
 * A TCP proxy in front of an etcd client port, to cut a client's connections while
 * etcd itself keeps running (to test watch resumption across a lost connection).
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private blocked = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Starts a proxy on a free 127.0.0.1 port forwarding to `target` (a URL or host:port). */
  static async start(target: string): Promise<TcpProxy> {
    const { hostname, port } = new URL(target.includes("://") ? target : `http://${target}`);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const addr = server.address();
    if (!addr || typeof addr !== "object") throw new Error("proxy has no port");
    const proxy = new TcpProxy(server, addr.port);
    server.on("connection", (client) => proxy.accept(client, hostname, Number(port)));
    return proxy;
  }

  /** The proxy's URL, to use as an etcd endpoint. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Drops every open connection and refuses new ones until unblock(). */
  block(): void {
    this.blocked = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  unblock(): void {
    this.blocked = false;
  }

  async close(): Promise<void> {
    this.block();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.blocked) {
      client.destroy();
      return;
    }
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
