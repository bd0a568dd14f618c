/**
 * Containers' memory and CPU limits, enforced with cgroups where the machine
 * lets the agent write them (root, a writable cgroup file system), as the
 * kubelet does through its container runtime.
 *
 * - Detected once at start: cgroup v2 (a unified hierarchy at the root:
 *   `cgroup.controllers` with `memory` and `cpu`) or v1 (the `memory` and `cpu`
 *   hierarchies mounted at ROOT/memory and ROOT/cpu). The agent's parent cgroup is
 *   `setpoint-<node>` under the agent's own cgroup (read from /proc/self/cgroup);
 *   in v2, where a cgroup with processes may not enable controllers for its
 *   children, the agent first moves itself into a leaf `setpoint-agent` beside it.
 * - One cgroup per container run, `<pod uid>_<container>_<restartCount>`: v2
 *   `memory.max`, `cpu.max` (quota and the 100 ms period), `cpu.weight`; v1
 *   `memory.limit_in_bytes`, `cpu.cfs_quota_us`/`cpu.cfs_period_us`, `cpu.shares`
 *   (requests map to shares/weight as the kubelet maps them).
 * - The process joins it before it execs (spawnContainer runs it through a shell
 *   that writes its own pid to the `cgroup.procs` files, then execs the program),
 *   so nothing it allocates escapes the limit.
 * - The OOM killer's work is read back from `memory.events` (v2) or
 *   `memory.oom_control` (v1: `oom_kill`, else `memory.failcnt`).
 * - Where cgroups cannot be written (not root, read-only, none mounted), limits
 *   are not enforced and the reason says why; nothing fails.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { type Container, parseQuantity } from "@setpoint/api";

/** The CFS period the kubelet uses (100 ms), in microseconds. */
export const CPU_PERIOD_US = 100_000;
/** The kubelet's smallest CFS quota (1 ms), in microseconds. */
const MIN_QUOTA_US = 1_000;
/** cpu.shares bounds (Linux). */
const MIN_SHARES = 2;
const MAX_SHARES = 262_144;

/** What a container's cgroup is given. */
export interface ContainerLimits {
  /** memory limit in bytes */
  memoryBytes?: number;
  /** CFS quota per CPU_PERIOD_US, from the CPU limit */
  cpuQuotaUs?: number;
  /** cpu.shares (v1) from the CPU request; cpu.weight (v2) is derived from it */
  cpuShares?: number;
}

/** A container's limits from its `resources`; undefined when it declares none. */
export function containerLimits(c: Container): ContainerLimits | undefined {
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  const memory = parseQuantity(limits.memory);
  const cpuLimit = parseQuantity(limits.cpu);
  // As Kubernetes defaults it: a request not given is the limit.
  const cpuRequest = parseQuantity(requests.cpu) ?? cpuLimit;
  const out: ContainerLimits = {};
  if (memory !== undefined && memory > 0) out.memoryBytes = Math.ceil(memory);
  if (cpuLimit !== undefined && cpuLimit > 0) {
    out.cpuQuotaUs = Math.max(MIN_QUOTA_US, Math.ceil(cpuLimit * CPU_PERIOD_US));
  }
  if (cpuRequest !== undefined) out.cpuShares = milliCpuToShares(Math.round(cpuRequest * 1000));
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The kubelet's cpu.shares for a CPU request in millicores. */
export function milliCpuToShares(milli: number): number {
  if (milli <= 0) return MIN_SHARES;
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor((milli * 1024) / 1000)));
}

/** cgroup v2's cpu.weight for cpu.shares, as the kubelet converts it. */
export function sharesToWeight(shares: number): number {
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

export interface CgroupsOptions {
  /** Where the cgroup file systems are mounted (default /sys/fs/cgroup). */
  root?: string;
  /** The agent's node name: its parent cgroup is setpoint-<node>. */
  nodeName: string;
  /** The agent's own /proc/self/cgroup (default read from /proc). */
  selfCgroup?: string;
}

/** Whether limits are enforced, how, and where. */
export interface CgroupSupport {
  enforced: boolean;
  /** "v1" or "v2" when enforced */
  version?: "v1" | "v2";
  /** Why limits are not enforced, or where the containers' cgroups are. */
  detail: string;
}

type Controller = "memory" | "cpu";

/** The agent's cgroups: detection, one cgroup per container run, OOM kills, removal. */
export class Cgroups {
  readonly support: CgroupSupport;
  /** v2: the parent dir; v1: the parent dir per controller. */
  private readonly parents: Partial<Record<Controller, string>> = {};

  constructor(opts: CgroupsOptions) {
    this.support = this.detect(opts);
  }

  get enforced(): boolean {
    return this.support.enforced;
  }

  private detect(opts: CgroupsOptions): CgroupSupport {
    const root = opts.root ?? "/sys/fs/cgroup";
    let self: string;
    try {
      self = opts.selfCgroup ?? readFileSync("/proc/self/cgroup", "utf8");
    } catch (err) {
      return {
        enforced: false,
        detail: `cannot read /proc/self/cgroup: ${(err as Error).message}`,
      };
    }
    const paths = new Map<string, string>();
    for (const line of self.split("\n")) {
      const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
      if (!m) continue;
      for (const c of m[1].split(",")) paths.set(c, m[2]);
    }
    const name = `setpoint-${opts.nodeName.replace(/[^A-Za-z0-9_.-]/g, "_")}`;
    try {
      if (existsSync(join(root, "cgroup.controllers"))) {
        return this.detectV2(root, paths.get("") ?? "/", name);
      }
      if (existsSync(join(root, "memory", "memory.limit_in_bytes"))) {
        return this.detectV1(root, paths, name);
      }
    } catch (err) {
      return {
        enforced: false,
        detail: `cgroups at ${root} are not writable: ${(err as Error).message}`,
      };
    }
    return { enforced: false, detail: `no cgroup v1 or v2 memory controller at ${root}` };
  }

  private detectV2(root: string, own: string, name: string): CgroupSupport {
    const available = readFileSync(join(root, "cgroup.controllers"), "utf8").split(/\s+/);
    if (!available.includes("memory") || !available.includes("cpu")) {
      return {
        enforced: false,
        detail: `cgroup v2 at ${root} lacks the memory or cpu controller`,
      };
    }
    const mine = join(root, own);
    const enable = (dir: string) =>
      writeFileSync(join(dir, "cgroup.subtree_control"), "+memory +cpu");
    try {
      enable(mine);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EBUSY") throw err;
      // Processes in a cgroup keep it from enabling controllers for its children: the
      // agent moves into a leaf of its own.
      const leaf = join(mine, "setpoint-agent");
      mkdirSync(leaf, { recursive: true });
      writeFileSync(join(leaf, "cgroup.procs"), String(process.pid));
      enable(mine);
    }
    const parent = join(mine, name);
    mkdirSync(parent, { recursive: true });
    enable(parent);
    this.parents.memory = parent;
    this.parents.cpu = parent;
    return { enforced: true, version: "v2", detail: `cgroup v2 at ${parent}` };
  }

  private detectV1(root: string, paths: Map<string, string>, name: string): CgroupSupport {
    for (const c of ["memory", "cpu"] as const) {
      const dir = join(root, c);
      if (!existsSync(join(dir, "cgroup.procs"))) {
        return { enforced: false, detail: `no cgroup v1 ${c} controller at ${dir}` };
      }
      const parent = join(dir, paths.get(c) ?? "/", name);
      mkdirSync(parent, { recursive: true });
      // Written to prove it can be (read-only or not ours fails here, not at a container's start).
      writeFileSync(join(parent, "notify_on_release"), "0");
      this.parents[c] = parent;
    }
    return {
      enforced: true,
      version: "v1",
      detail: `cgroup v1 at ${this.parents.memory} and ${this.parents.cpu}`,
    };
  }

  private dirs(id: string): string[] {
    const out = new Set<string>();
    for (const p of Object.values(this.parents)) out.add(join(p, id));
    return [...out];
  }

  /**
   * Makes the cgroup `id` with `limits`; returns the `cgroup.procs` files the
   * process must join (undefined when limits are not enforced).
   */
  create(id: string, limits: ContainerLimits): string[] | undefined {
    if (!this.enforced) return undefined;
    const v2 = this.support.version === "v2";
    const files: string[] = [];
    for (const dir of this.dirs(id)) {
      mkdirSync(dir, { recursive: true });
      files.push(join(dir, "cgroup.procs"));
    }
    const mem = this.parents.memory as string;
    const cpu = this.parents.cpu as string;
    if (limits.memoryBytes !== undefined) {
      const file = v2 ? "memory.max" : "memory.limit_in_bytes";
      writeFileSync(join(mem, id, file), String(limits.memoryBytes));
      if (v2 && existsSync(join(mem, id, "memory.swap.max"))) {
        writeFileSync(join(mem, id, "memory.swap.max"), "0");
      }
    }
    if (limits.cpuQuotaUs !== undefined) {
      if (v2) {
        writeFileSync(join(cpu, id, "cpu.max"), `${limits.cpuQuotaUs} ${CPU_PERIOD_US}`);
      } else {
        writeFileSync(join(cpu, id, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
        writeFileSync(join(cpu, id, "cpu.cfs_quota_us"), String(limits.cpuQuotaUs));
      }
    }
    if (limits.cpuShares !== undefined) {
      if (v2) writeFileSync(join(cpu, id, "cpu.weight"), String(sharesToWeight(limits.cpuShares)));
      else writeFileSync(join(cpu, id, "cpu.shares"), String(limits.cpuShares));
    }
    return files;
  }

  /** The directory of cgroup `id` for `controller` (to read its files back). */
  path(id: string, controller: Controller): string | undefined {
    const p = this.parents[controller];
    return p && join(p, id);
  }

  /** Whether the OOM killer killed a process in cgroup `id`. */
  oomKilled(id: string): boolean {
    const dir = this.path(id, "memory");
    if (!dir) return false;
    const read = (f: string) => {
      try {
        return readFileSync(join(dir, f), "utf8");
      } catch {
        return undefined;
      }
    };
    const field = (text: string | undefined, key: string) => {
      const m = text && new RegExp(`^${key} (\\d+)$`, "m").exec(text);
      return m ? Number(m[1]) : undefined;
    };
    if (this.support.version === "v2") return (field(read("memory.events"), "oom_kill") ?? 0) > 0;
    const kills = field(read("memory.oom_control"), "oom_kill");
    if (kills !== undefined) return kills > 0;
    return Number(read("memory.failcnt") ?? 0) > 0;
  }

  /** Removes cgroup `id` (once its processes are gone); false when it could not be yet. */
  remove(id: string): boolean {
    let ok = true;
    for (const dir of this.dirs(id)) {
      try {
        rmdirSync(dir);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") ok = false;
      }
    }
    return ok;
  }

  /** Removes the agent's parent cgroups, when empty (its Pods were all stopped). */
  removeParents(): void {
    for (const parent of new Set(Object.values(this.parents))) {
      try {
        rmdirSync(parent);
      } catch {}
    }
  }

  /** Removes the containers' cgroups not in `keep` (left by runs that ended while no agent ran). */
  sweep(keep: Set<string>): void {
    if (!this.enforced) return;
    for (const parent of new Set(Object.values(this.parents))) {
      let names: string[];
      try {
        names = readdirSync(parent, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => d.name);
      } catch {
        continue;
      }
      for (const n of names) {
        if (keep.has(n)) continue;
        try {
          rmdirSync(join(parent, n));
        } catch {}
      }
    }
  }
}

/** A shell that puts itself in the cgroups (the `cgroup.procs` files given first), then execs the program. */
export function cgroupWrapper(procsFiles: string[], argv: string[]): string[] {
  const script =
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n-1)); done; exec "$@"';
  return [
    "/bin/sh",
    "-c",
    script,
    "setpoint-cgroup",
    String(procsFiles.length),
    ...procsFiles,
    ...argv,
  ];
}
