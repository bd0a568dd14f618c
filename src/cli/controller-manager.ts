/**
 * `setpoint controller-manager`: runs the built-in controllers (garbage
 * collector, namespace deletion, event expiry) as their own process against an
 * API server, with optional leader election, metrics and health endpoints,
 * until SIGINT or SIGTERM.
 */
import { parseArgs } from "node:util";
import { KubeconfigError, loadKubeconfig } from "@setpoint/runtime";
import {
  BUILTIN_CONTROLLER_NAMES,
  CONTROLLER_MANAGER_LEASE,
  CONTROLLER_MANAGER_LEASE_NAMESPACE,
  checkControllerNames,
  createControllerManager,
  DEFAULT_EVENT_TTL_MS,
  OFF_BY_DEFAULT_CONTROLLERS,
  SCHEDULER_CONTROLLER,
  UnknownControllerError,
} from "../controllers/index.ts";
import { listenFailure } from "../controlplane/errors.ts";
import { parseDuration } from "./flags.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { UsageError } from "./usage-error.ts";

export const CONTROLLER_MANAGER_USAGE = `Usage: setpoint controller-manager [--kubeconfig FILE] [flags]

Runs the built-in controllers (${BUILTIN_CONTROLLER_NAMES.join(", ")})
against an API server, as an ordinary client of its API.

Flags:
  --kubeconfig FILE          kubeconfig of the API server (default: $KUBECONFIG,
                             the pod's service account, then ~/.kube/config)
  --context NAME             kubeconfig context to use
  --use-service-account-credentials  each controller writes as its own ServiceAccount
                             in kube-system (bound to its system:controller:* role); the
                             kubeconfig's user (system:kube-controller-manager) only
                             reads and mints their tokens, as in Kubernetes
  --scheduler-kubeconfig FILE  the scheduler's own kubeconfig (system:kube-scheduler;
                             'setpoint credentials --scheduler' writes one); needed with
                             --use-service-account-credentials unless the scheduler is off
  --disable-controllers NAME,...  built-in controllers not to run (as on \`setpoint up\`;
                             --disable is its deprecated old name)
  --leader-elect             act only while holding the Lease
                             ${CONTROLLER_MANAGER_LEASE_NAMESPACE}/${CONTROLLER_MANAGER_LEASE} (for several replicas)
  --metrics-addr HOST:PORT   serve /metrics there (off when unset)
  --health-addr HOST:PORT    serve /healthz and /readyz there (off when unset)
  --event-ttl DURATION       how long an Event lives after its latest occurrence (default 1h)
  --node-monitor-grace-period DURATION  how long a Node may go without renewing its Lease
                             before it is marked Unknown (default 50s)
  --terminated-pod-gc-threshold N  terminated Pods kept before the oldest are deleted
                             (default 12500; 0: no limit)
${logUsage(29)}`;

/** --node-monitor-grace-period and --terminated-pod-gc-threshold, where given. */
export function parseNodeFlags(values: {
  "node-monitor-grace-period"?: string | undefined;
  "terminated-pod-gc-threshold"?: string | undefined;
}): { nodeMonitorGracePeriodMs?: number; terminatedPodGcThreshold?: number } {
  const out: { nodeMonitorGracePeriodMs?: number; terminatedPodGcThreshold?: number } = {};
  const grace = values["node-monitor-grace-period"];
  if (grace !== undefined) out.nodeMonitorGracePeriodMs = parseDuration(grace);
  const threshold = values["terminated-pod-gc-threshold"];
  if (threshold !== undefined) {
    if (!/^\d+$/.test(threshold)) {
      throw new UsageError(
        `--terminated-pod-gc-threshold must be a whole number, got ${JSON.stringify(threshold)}`,
      );
    }
    out.terminatedPodGcThreshold = Number(threshold);
  }
  return out;
}

/** Splits a comma-separated list of controller names, checking each. */
export function parseControllerList(text: string | undefined): string[] {
  const names = (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  checkControllerNames(names);
  return names;
}

/** Whether the flag's HOST:PORT (or :PORT) names the address "HOST:PORT" that failed. */
function sameAddress(flag: string | undefined, failed: string): boolean {
  if (!flag) return false;
  const port = failed.slice(failed.lastIndexOf(":") + 1);
  return flag.slice(flag.lastIndexOf(":") + 1) === port;
}

export async function controllerManager(argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof UnknownControllerError ||
      err instanceof KubeconfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(
        `setpoint controller-manager: ${(err as Error).message}\n\n${CONTROLLER_MANAGER_USAGE}`,
      );
      return 2;
    }
    throw err;
  }
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      context: { type: "string" },
      "use-service-account-credentials": { type: "boolean", default: false },
      "scheduler-kubeconfig": { type: "string" },
      "disable-controllers": { type: "string" },
      // Deprecated: the old name of --disable-controllers.
      disable: { type: "string" },
      "leader-elect": { type: "boolean", default: false },
      "metrics-addr": { type: "string" },
      "health-addr": { type: "string" },
      "event-ttl": { type: "string" },
      "node-monitor-grace-period": { type: "string" },
      "terminated-pod-gc-threshold": { type: "string" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(CONTROLLER_MANAGER_USAGE);
    return 0;
  }
  const disabled = parseControllerList(
    [values["disable-controllers"], values.disable].filter(Boolean).join(","),
  );
  const ttlMs = values["event-ttl"] ? parseDuration(values["event-ttl"]) : DEFAULT_EVENT_TTL_MS;
  const nodeFlags = parseNodeFlags(values);
  const restConfig = loadKubeconfig({ path: values.kubeconfig, context: values.context });
  const useServiceAccountCredentials = values["use-service-account-credentials"];
  const schedulerKubeconfig = values["scheduler-kubeconfig"];
  if (
    useServiceAccountCredentials &&
    schedulerKubeconfig === undefined &&
    !disabled.includes(SCHEDULER_CONTROLLER)
  ) {
    throw new UsageError(
      `--use-service-account-credentials needs --scheduler-kubeconfig (the scheduler is not a ServiceAccount), or --disable-controllers ${SCHEDULER_CONTROLLER}`,
    );
  }
  const controllerClients =
    schedulerKubeconfig !== undefined
      ? { [SCHEDULER_CONTROLLER]: loadKubeconfig({ path: schedulerKubeconfig }) }
      : undefined;
  const { logger } = createCliLogger(values);
  if (values.disable !== undefined) {
    logger.warn("--disable is deprecated: use --disable-controllers, as on `setpoint up`");
  }
  const cm = createControllerManager({
    restConfig,
    useServiceAccountCredentials,
    ...(controllerClients ? { controllerClients } : {}),
    disabled,
    enabled: OFF_BY_DEFAULT_CONTROLLERS,
    leaderElection: values["leader-elect"],
    metricsAddr: values["metrics-addr"],
    healthAddr: values["health-addr"],
    eventTtl: { ttlMs },
    nodeLifecycle: { nodeMonitorGracePeriodMs: nodeFlags.nodeMonitorGracePeriodMs },
    podGc: { terminatedPodGcThreshold: nodeFlags.terminatedPodGcThreshold },
    logger,
  });
  const stop = new AbortController();
  const onSignal = (signal: string) => {
    logger.info({ signal }, "shutting down");
    stop.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    await cm.start(stop.signal);
  } catch (err) {
    const failed = listenFailure(
      err,
      (err as { address?: string }).address ?? "",
      (err as { port?: number }).port ?? 0,
    );
    if (!failed) throw err;
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    // The address is the metrics' or the health endpoints': name the flag that sets it.
    const flag = sameAddress(values["metrics-addr"], failed.subject)
      ? "--metrics-addr"
      : "--health-addr";
    process.stderr.write(
      `setpoint controller-manager: ${failed.message}; serve on another address with ${flag} HOST:PORT\n`,
    );
    return 1;
  }
  const where = [
    cm.manager.metricsAddress ? `metrics on ${cm.manager.metricsAddress}` : "",
    cm.manager.healthAddress ? `health on ${cm.manager.healthAddress}` : "",
  ].filter(Boolean);
  process.stdout.write(
    `controller-manager running ${cm.names.join(", ") || "no controllers"} against ${restConfig.server}` +
      `${values["leader-elect"] ? " (leader election on)" : ""}${where.length ? `; ${where.join(", ")}` : ""}\n`,
  );
  await cm.done;
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  return 0;
}
