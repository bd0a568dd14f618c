/**
 * The isolated mode (`setpoint agent --isolation=namespaces`) as the pod worker
 * and the agent use it: each Pod's sandbox (network.ts) made before its first
 * container and again when it went missing, containers started in it with their
 * volumes mounted (wrapper.ts, mounts.ts), commands entered into a running
 * container's namespaces, and everything removed with the Pod.
 */
import { holds, makeMountPoints, removeMountPoints } from "./mounts.ts";
import { type NetworkSandbox, PodNetwork } from "./network.ts";
import { type IsolationTools, isolationTools } from "./support.ts";
import { type BindMount, enterArgv, sandboxWrapper } from "./wrapper.ts";

/** The isolation modes of the agent: none (the default) or namespaces. */
export const ISOLATION_MODES = ["none", "namespaces"] as const;
export type IsolationMode = (typeof ISOLATION_MODES)[number];

/** A Pod's sandbox as its record keeps it. */
export interface PodSandbox extends NetworkSandbox {
  /** Mount points made on the host for its containers (mounts.ts). */
  mountPoints?: string[];
  /** Every mountPath its containers use (a mount point another Pod made is kept while it is used). */
  mountTargets?: string[];
}

/** The isolated mode cannot run here; the message says why, in one line. */
export class IsolationUnavailableError extends Error {}

export class Isolation {
  readonly network: PodNetwork;
  private bridge: Promise<void> | undefined;

  private constructor(
    readonly tools: IsolationTools,
    range: number,
    clusterIPRange?: string,
  ) {
    this.network = new PodNetwork(tools, range, clusterIPRange);
  }

  /** The isolated mode for the Pod range `range`; throws IsolationUnavailableError where it cannot run. */
  static open(range: number, clusterIPRange?: string): Isolation {
    const tools = isolationTools();
    if (typeof tools === "string") throw new IsolationUnavailableError(tools);
    return new Isolation(tools, range, clusterIPRange);
  }

  /** Checks the range against the machine's routes and makes the node's bridge (once). */
  start(): Promise<void> {
    this.bridge ??= (async () => {
      const conflict = await this.network.conflict();
      if (conflict) throw new IsolationUnavailableError(conflict);
      await this.network.ensureBridge();
    })();
    return this.bridge;
  }

  /** The Pod's sandbox: `current` when it is whole, else made (again). */
  async ensure(uid: string, podIP: string, current: PodSandbox | undefined): Promise<PodSandbox> {
    await this.start();
    if (current && this.network.exists(current)) return current;
    const made = await this.network.create(uid, podIP);
    const { mountPoints, mountTargets } = current ?? {};
    return {
      ...made,
      ...(mountPoints ? { mountPoints } : {}),
      ...(mountTargets ? { mountTargets } : {}),
    };
  }

  /** Makes the mount points of `mounts` missing on the host; returns the sandbox with them recorded. */
  prepareMounts(sandbox: PodSandbox, mounts: BindMount[]): PodSandbox {
    const made = makeMountPoints(mounts);
    const targets = new Set(sandbox.mountTargets ?? []);
    const known = targets.size;
    for (const m of mounts) targets.add(m.target);
    if (!made.length && targets.size === known) return sandbox;
    return {
      ...sandbox,
      mountPoints: [...new Set([...(sandbox.mountPoints ?? []), ...made])],
      mountTargets: [...targets],
    };
  }

  /** `argv` started in the sandbox, in a mount namespace of its own with `mounts`. */
  wrap(sandbox: PodSandbox, mounts: BindMount[], argv: string[]): string[] {
    return sandboxWrapper(this.tools, { netns: sandbox.netns, mounts }, argv);
  }

  /** `argv` run in the namespaces of the running process `pid`. */
  enter(pid: number, cwd: string | undefined, argv: string[]): string[] {
    return enterArgv(this.tools, pid, cwd, argv);
  }

  /**
   * Removes a Pod's sandbox; the mount points made for it go, unless one of
   * `others` (the agent's other Pods' sandboxes, changed in place) uses them:
   * those are handed to it, to be removed with it.
   */
  async remove(sandbox: PodSandbox, others: PodSandbox[]): Promise<void> {
    await this.network.remove(sandbox);
    const used = others.flatMap((o) => [...(o.mountPoints ?? []), ...(o.mountTargets ?? [])]);
    for (const p of removeMountPoints(sandbox.mountPoints ?? [], used)) {
      const heir = others.find((o) => (o.mountTargets ?? []).some((t) => holds(p, t)));
      if (heir && !heir.mountPoints?.includes(p))
        heir.mountPoints = [...(heir.mountPoints ?? []), p];
    }
  }

  /** Removes the sandboxes of this node that no Pod in `keep` (namespace names) owns. */
  sweep(keep: Set<string>): Promise<string[]> {
    return this.network.sweep(keep);
  }

  /** Removes the node's bridge (every Pod stopped). */
  async stop(): Promise<void> {
    await this.network.removeBridge();
    this.bridge = undefined;
  }
}
