/**
 * Whether this machine can run isolated Pods, and the tools they need: Linux,
 * root (network namespaces, veth pairs and mounts need it), iproute2's `ip`,
 * util-linux's `nsenter`, `unshare` and `mount`, and a trial `unshare --net
 * --mount` that proves the kernel lets this process make namespaces (a
 * container without CAP_SYS_ADMIN does not).
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";

/** The programs the isolated mode runs, by absolute path (a container's PATH may lack them). */
export interface IsolationTools {
  ip: string;
  nsenter: string;
  unshare: string;
  mount: string;
  sh: string;
}

const SEARCH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

function find(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(":").filter(Boolean), ...SEARCH];
  for (const dir of dirs) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return undefined;
}

/** The tools, or why the isolated mode cannot run here (one line). */
export function isolationTools(): IsolationTools | string {
  if (process.platform !== "linux") return `needs Linux, this is ${process.platform}`;
  const uid = process.getuid?.();
  if (uid !== 0) {
    return `needs root (it makes network namespaces, veth pairs and mounts); this agent runs as uid ${uid}`;
  }
  const tools: Partial<IsolationTools> = {};
  for (const [key, name, pkg] of [
    ["ip", "ip", "iproute2"],
    ["nsenter", "nsenter", "util-linux"],
    ["unshare", "unshare", "util-linux"],
    ["mount", "mount", "util-linux"],
    ["sh", "sh", "a POSIX shell"],
  ] as const) {
    const file = find(name);
    if (!file) return `needs ${name} (${pkg}), which is not installed`;
    tools[key] = file;
  }
  const trial = spawnSync(tools.unshare as string, ["--net", "--mount", "true"], {
    encoding: "utf8",
    timeout: 10_000,
  });
  if (trial.status !== 0) {
    const why = (trial.stderr || trial.error?.message || `exit ${trial.status}`).trim();
    return `namespaces are unavailable here (unshare --net --mount: ${why.split("\n")[0]})`;
  }
  return tools as IsolationTools;
}
