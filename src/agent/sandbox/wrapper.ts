/**
 * The commands that put a process in its Pod's namespaces before it execs, so
 * that nothing it does happens outside them (the same race-free idea as the
 * cgroup wrapper, pods/cgroups.ts): `nsenter --net=<the Pod's netns>`, then
 * `unshare --mount --propagation private` (a mount namespace of its own, whose
 * mounts never reach the host), then a shell that bind-mounts each volume at its
 * mountPath (remounted read-only where asked) and execs the program. Each step
 * execs the next, so the container's pid is the program's from the start.
 */
import type { IsolationTools } from "./support.ts";

/** A volume (or a file or directory of one) shown at `target` in a container's mount namespace. */
export interface BindMount {
  source: string;
  target: string;
  readOnly: boolean;
}

/** Where `ip netns` keeps a named network namespace (a bind mount that outlives every process in it). */
export function netnsPath(name: string): string {
  return `/run/netns/${name}`;
}

const MOUNT_SCRIPT =
  'm=$1; shift; while [ "$1" != -- ]; do "$m" --bind "$1" "$2" || exit 126; if [ "$3" = ro ]; then "$m" -o remount,bind,ro "$2" || exit 126; fi; shift 3; done; shift; exec "$@"';

/** `argv` run in the network namespace `netns` (none: the host's) and a mount namespace of its own with `mounts`. */
export function sandboxWrapper(
  tools: IsolationTools,
  sandbox: { netns?: string; mounts: BindMount[] },
  argv: string[],
): string[] {
  const mounts = sandbox.mounts.flatMap((m) => [m.source, m.target, m.readOnly ? "ro" : "rw"]);
  const inner = [
    tools.unshare,
    "--mount",
    "--propagation",
    "private",
    "--",
    tools.sh,
    "-c",
    MOUNT_SCRIPT,
    "setpoint-mounts",
    tools.mount,
    ...mounts,
    "--",
    ...argv,
  ];
  return sandbox.netns
    ? [tools.nsenter, `--net=${netnsPath(sandbox.netns)}`, "--", ...inner]
    : inner;
}

/**
 * `argv` run in the network and mount namespaces of the running process `pid`
 * (`kubectl exec`, exec probes and hooks), in the working directory `cwd`.
 */
export function enterArgv(
  tools: IsolationTools,
  pid: number,
  cwd: string | undefined,
  argv: string[],
): string[] {
  return [
    tools.nsenter,
    "-t",
    String(pid),
    "-n",
    "-m",
    cwd ? `--wd=${cwd}` : "--wd",
    "--",
    ...argv,
  ];
}
