/**
 * The service proxy as a process of its own, which the agent starts and which
 * outlives it, as Pods do (and as kube-proxy is apart from the kubelet): while
 * the agent restarts, the cluster IPs and node ports go on being served. It is
 * a detached helper (detached-process.ts): its identity in
 * DATA/service-proxy.json, its output in DATA/service-proxy.log, adopted when
 * it still runs, started again when it died; it needs no apiserver (it serves
 * the table on disk).
 * The process itself (`setpoint service-proxy`, src/proxy/service-proxy.ts)
 * follows the table the agent writes to disk; the two never talk otherwise.
 */
import type { RuntimeLogger } from "@setpoint/runtime";
import { DetachedProcess } from "./detached-process.ts";

export { STOP_TIMEOUT_MS, setpointCommand } from "./detached-process.ts";

/** The proxy process's identity, in the agent's data directory. */
export const PROXY_PROCESS_FILE = "service-proxy.json";
/** The proxy process's log, in the agent's data directory. */
export const PROXY_LOG_FILE = "service-proxy.log";
/** The environment variable naming a proxy process's data directory (to find it in /proc). */
export const PROXY_DATA_DIR_ENV = "SETPOINT_SERVICE_PROXY_DATA_DIR";

export interface ProxyProcessOptions {
  dataDir: string;
  /** The node's address, where node ports listen. */
  nodeAddress: string;
  logger: RuntimeLogger;
  /** The command that runs `setpoint` (default: node and this package's bin/setpoint.mjs). */
  command?: string[] | undefined;
}

export class ProxyProcess extends DetachedProcess {
  constructor(opts: ProxyProcessOptions) {
    super({
      name: "service-proxy",
      title: "service proxy",
      dataDir: opts.dataDir,
      args: ["--node-address", opts.nodeAddress],
      envVar: PROXY_DATA_DIR_ENV,
      logger: opts.logger,
      command: opts.command,
    });
  }
}
