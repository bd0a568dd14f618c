/**
 * Pods' network namespaces (the pod sandbox of Kubernetes: every container of a
 * Pod shares it, so `localhost` between them works, and each listens on its
 * containerPort without meeting another Pod's).
 *
 * - The node has a bridge, `spbr<N>`, holding 10.N.0.1/16, the Pods' gateway
 *   (`--pod-range N`: isolated Pods get 10.N.x.y, since 127.0.0.0/8 cannot be
 *   routed over a veth). The host reaches every Pod through it, so probes, the
 *   service proxy and the gateway use podIP:containerPort as they do in the
 *   default mode; Pods reach each other through it without IP forwarding.
 * - A Pod gets the namespace `setpoint-<N>-<uid>` made with `ip netns add` (a bind
 *   mount under /run/netns: it outlives the agent, so a restarted agent finds it),
 *   `lo` up, and a veth pair: `eth0` inside with the Pod's IP/16 and a default
 *   route through the gateway, `sp<N>v<hash>` on the host, a port of the bridge.
 * - Services' cluster IPs (127.100.0.0/16 by default) are served by the service
 *   proxy in the host's namespace. Inside the Pod that range would be its own
 *   loopback, so it is routed to the gateway instead: the Pod's local routing
 *   table is consulted after a rule sending the range to the main table, where a
 *   route leads it through eth0, and `route_localnet` lets such addresses cross
 *   eth0 and the bridge. The rest of 127.0.0.0/8 stays the Pod's own.
 * - Removing a Pod's sandbox deletes its host veth (its peer and routes go with
 *   it) and its namespace; a sweep at start removes those of this node's range
 *   that no Pod on disk owns.
 */
import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import type { IsolationTools } from "./support.ts";
import { netnsPath } from "./wrapper.ts";

const run = promisify(execFile);

/** The first octet of isolated Pods' addresses: 10.N.x.y. */
export const ISOLATED_POD_NET = 10;

/** Kubernetes' default Service range here (the apiserver's --service-cluster-ip-range default). */
export const DEFAULT_CLUSTER_IP_RANGE = "127.100.0.0/16";

/** A Pod's network sandbox, as kept in its record. */
export interface NetworkSandbox {
  /** Its name under /run/netns (`ip netns`). */
  netns: string;
  /** The host end of its veth pair. */
  hostVeth: string;
}

/** A parsed IPv4 CIDR: its first address as a number, and its prefix length. */
export function parseCidr(cidr: string): { base: number; bits: number } | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/.exec(cidr);
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  const bits = m[5] === undefined ? 32 : Number(m[5]);
  if (octets.some((o) => o > 255) || bits > 32) return undefined;
  const ip = octets.reduce((a, o) => a * 256 + o, 0);
  const size = 2 ** (32 - bits);
  return { base: ip - (ip % size), bits };
}

function overlaps(a: { base: number; bits: number }, b: { base: number; bits: number }): boolean {
  const endA = a.base + 2 ** (32 - a.bits);
  const endB = b.base + 2 ** (32 - b.bits);
  return a.base < endB && b.base < endA;
}

export class PodNetwork {
  readonly bridge: string;
  readonly gateway: string;
  readonly cidr: string;

  constructor(
    private readonly tools: IsolationTools,
    readonly range: number,
    readonly clusterIPRange: string = DEFAULT_CLUSTER_IP_RANGE,
  ) {
    this.bridge = `spbr${range}`;
    this.gateway = `${ISOLATED_POD_NET}.${range}.0.1`;
    this.cidr = `${ISOLATED_POD_NET}.${range}.0.0/16`;
  }

  private ip(args: string[]): Promise<unknown> {
    return run(this.tools.ip, args).catch((err: Error & { stderr?: string }) => {
      throw new Error(`ip ${args.join(" ")}: ${(err.stderr || err.message).trim()}`);
    });
  }

  /** A route of this machine that the Pods' range would shadow, described; undefined when none. */
  async conflict(): Promise<string | undefined> {
    const mine = parseCidr(this.cidr);
    const { stdout } = await run(this.tools.ip, ["-4", "-o", "route", "show", "table", "all"]);
    for (const line of stdout.split("\n")) {
      const words = line.trim().split(/\s+/);
      const dst = words[0] === "local" || words[0] === "broadcast" ? words[1] : words[0];
      const dev = words[words.indexOf("dev") + 1];
      if (!dst || dst === "default" || dev === this.bridge || !words.includes("dev")) continue;
      const other = parseCidr(dst);
      if (mine && other && overlaps(mine, other)) {
        return `the Pods' range ${this.cidr} overlaps this machine's route "${line.trim()}"; choose another --pod-range`;
      }
    }
    return undefined;
  }

  /** Makes the node's bridge with the gateway address, unless it is there. */
  async ensureBridge(): Promise<void> {
    if (!existsSync(`/sys/class/net/${this.bridge}`)) {
      await this.ip(["link", "add", this.bridge, "type", "bridge"]);
    }
    await this.ip(["addr", "replace", `${this.gateway}/16`, "dev", this.bridge]);
    await this.ip(["link", "set", this.bridge, "up"]);
    writeFileSync(`/proc/sys/net/ipv4/conf/${this.bridge}/route_localnet`, "1");
  }

  /** Removes the node's bridge (every Pod of the node is gone). */
  async removeBridge(): Promise<void> {
    if (existsSync(`/sys/class/net/${this.bridge}`)) {
      await this.ip(["link", "del", this.bridge]).catch(() => {});
    }
  }

  /** The sandbox names of the Pod `uid`. */
  names(uid: string): NetworkSandbox {
    const hash = createHash("sha256").update(uid).digest("hex").slice(0, 8);
    return { netns: `setpoint-${this.range}-${uid}`, hostVeth: `sp${this.range}v${hash}` };
  }

  /** Whether the sandbox is whole: its namespace and its host veth both there. */
  exists(s: NetworkSandbox): boolean {
    return existsSync(netnsPath(s.netns)) && existsSync(`/sys/class/net/${s.hostVeth}`);
  }

  /** Runs `ip -batch` (in the namespace `netns`, if given); stops at the first command that fails. */
  private batch(netns: string | undefined, lines: string[]): Promise<void> {
    return new Promise((done, fail) => {
      const child = spawn(this.tools.ip, [...(netns ? ["-n", netns] : []), "-batch", "-"], {
        stdio: ["pipe", "ignore", "pipe"],
      });
      let err = "";
      child.stderr.on("data", (d: Buffer) => {
        err += d.toString();
      });
      child.once("error", fail);
      child.once("close", (code) => {
        if (code === 0) done();
        else fail(new Error(`ip${netns ? ` -n ${netns}` : ""}: ${err.trim() || `exit ${code}`}`));
      });
      child.stdin.end(`${lines.join("\n")}\n`);
    });
  }

  /** Runs a shell line in the network namespace `netns`. */
  private inNamespace(netns: string, script: string): Promise<unknown> {
    return run(this.tools.nsenter, [
      `--net=${netnsPath(netns)}`,
      "--",
      this.tools.sh,
      "-c",
      script,
    ]).catch((err: Error & { stderr?: string }) => {
      throw new Error(`${script}: ${(err.stderr || err.message).trim()}`);
    });
  }

  /** Makes the Pod's namespace with its address `podIP` (what a half-made one left is removed first). */
  async create(uid: string, podIP: string): Promise<NetworkSandbox> {
    const s = this.names(uid);
    await this.remove(s);
    try {
      // Two batches of `ip` (one process each) and one shell in the namespace.
      await this.batch(undefined, [
        `netns add ${s.netns}`,
        `link add ${s.hostVeth} type veth peer name eth0 netns ${s.netns}`,
        `link set ${s.hostVeth} master ${this.bridge} up`,
      ]);
      await this.batch(s.netns, [
        "link set lo up",
        `addr add ${podIP}/16 dev eth0`,
        "link set eth0 up",
        `route add default via ${this.gateway}`,
        // The cluster IPs go to the host: looked up in the main table before the local one.
        "rule add pref 100 lookup local",
        "rule del pref 0 lookup local",
        `rule add pref 10 to ${this.clusterIPRange} lookup main`,
        `route add ${this.clusterIPRange} via ${this.gateway} dev eth0`,
      ]);
      await this.inNamespace(s.netns, "echo 1 > /proc/sys/net/ipv4/conf/eth0/route_localnet");
    } catch (err) {
      await this.remove(s);
      throw err;
    }
    return s;
  }

  /** Removes the Pod's veth pair and namespace (whatever of them is there), in one batch. */
  async remove(s: NetworkSandbox): Promise<void> {
    const lines: string[] = [];
    if (existsSync(`/sys/class/net/${s.hostVeth}`)) lines.push(`link del ${s.hostVeth}`);
    if (existsSync(netnsPath(s.netns))) lines.push(`netns del ${s.netns}`);
    if (lines.length) await this.batch(undefined, lines);
  }

  /** Removes the namespaces and host veths of this node's range whose namespace is not in `keep`. */
  async sweep(keep: Set<string>): Promise<string[]> {
    const removed: string[] = [];
    const prefix = `setpoint-${this.range}-`;
    let names: string[] = [];
    try {
      names = readdirSync("/run/netns");
    } catch {}
    for (const name of names) {
      if (!name.startsWith(prefix) || keep.has(name)) continue;
      await this.remove(this.names(name.slice(prefix.length)));
      removed.push(name);
    }
    const kept = new Set([...keep].map((n) => this.names(n.slice(prefix.length)).hostVeth));
    let links: string[] = [];
    try {
      links = readdirSync("/sys/class/net");
    } catch {}
    for (const link of links) {
      if (!link.startsWith(`sp${this.range}v`) || kept.has(link)) continue;
      await this.ip(["link", "del", link]).catch(() => {});
      removed.push(link);
    }
    return removed;
  }
}
