/**
 * `setpoint gateway`: runs the gateway (src/gateway) against an API server: the
 * Ingresses of its IngressClass served on --listen, from the route table in
 * --data-dir at once and from the API as soon as it answers, until SIGTERM or
 * SIGINT (then it stops accepting, finishes requests in flight and exits).
 */
import { parseArgs } from "node:util";
import { KubeconfigError, loadKubeconfig } from "@setpoint/runtime";
import { DEFAULT_INGRESS_CLASS, Gateway, splitHostPort } from "../gateway/index.ts";
import { createCliLogger, LOG_OPTIONS, logUsage } from "./logging.ts";
import { UsageError } from "./usage-error.ts";

export const GATEWAY_USAGE = `Usage: setpoint gateway --data-dir DIR [--kubeconfig FILE] [flags]

Serves the Ingresses of an IngressClass as an HTTP(S) reverse proxy. Routes are
kept in DIR and served from there while the API server cannot be reached.

Flags:
  --kubeconfig FILE          kubeconfig of the API server (default: $KUBECONFIG,
                             the pod's service account, then ~/.kube/config)
  --context NAME             kubeconfig context to use
  --listen HOST:PORT         HTTP listener (default 127.0.0.1:8080)
  --tls-listen HOST:PORT     HTTPS listener, certificates by SNI (off when unset)
  --admin-listen HOST:PORT   /readyz, /healthz and /metrics (off when unset)
  --data-dir DIR             where the route table is kept (required)
  --ingress-class NAME       the IngressClass served (default ${DEFAULT_INGRESS_CLASS})
  --publish-address ADDR     address written to the Ingresses' status.loadBalancer
                             (default: the --listen host, 127.0.0.1 for 0.0.0.0)
  --offline                  serve the saved table only; never contact the API
  --no-access-log            do not log each request
  --shutdown-grace DURATION  how long SIGTERM waits for requests in flight (default 30s)
${logUsage(29)}`;

export async function gateway(argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof KubeconfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`setpoint gateway: ${(err as Error).message}\n\n${GATEWAY_USAGE}`);
      return 2;
    }
    throw err;
  }
}

function seconds(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text);
  if (!m) throw new UsageError(`invalid duration ${JSON.stringify(text)} (e.g. 30s, 500ms, 1m)`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] as "ms" | "s" | "m"];
}

async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      context: { type: "string" },
      listen: { type: "string", default: "127.0.0.1:8080" },
      "tls-listen": { type: "string" },
      "admin-listen": { type: "string" },
      "data-dir": { type: "string" },
      "ingress-class": { type: "string", default: DEFAULT_INGRESS_CLASS },
      "publish-address": { type: "string" },
      offline: { type: "boolean", default: false },
      "no-access-log": { type: "boolean", default: false },
      "shutdown-grace": { type: "string", default: "30s" },
      ...LOG_OPTIONS,
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(GATEWAY_USAGE);
    return 0;
  }
  if (!values["data-dir"]) throw new UsageError("--data-dir is required");
  for (const flag of ["listen", "tls-listen", "admin-listen"] as const) {
    const v = values[flag];
    if (v === undefined) continue;
    try {
      splitHostPort(v);
    } catch (err) {
      throw new UsageError(`--${flag}: ${(err as Error).message}`);
    }
  }
  const graceMs = seconds(values["shutdown-grace"]);
  const restConfig = values.offline
    ? undefined
    : loadKubeconfig({ path: values.kubeconfig, context: values.context });
  const { logger } = createCliLogger(values);
  const gw = new Gateway({
    restConfig,
    listen: values.listen,
    tlsListen: values["tls-listen"],
    adminListen: values["admin-listen"],
    dataDir: values["data-dir"],
    ingressClass: values["ingress-class"],
    publishAddress: values["publish-address"],
    accessLog: !values["no-access-log"],
    logger,
  });
  await gw.start();
  const where = [
    `http on ${gw.address}`,
    gw.tlsAddress ? `https on ${gw.tlsAddress}` : "",
    gw.adminAddress ? `admin on ${gw.adminAddress}` : "",
  ].filter(Boolean);
  process.stdout.write(
    `gateway serving IngressClass ${values["ingress-class"]}: ${where.join(", ")}; ` +
      `${gw.ready ? `${gw.table?.routes.length} routes from ${values["data-dir"]}` : "no saved routes yet"}` +
      `${restConfig ? `; following ${restConfig.server}` : " (offline)"}\n`,
  );
  const signal = await new Promise<string>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  logger.info(
    { signal, inFlight: gw.proxy.inFlight },
    "shutting down: finishing requests in flight",
  );
  await gw.stop(graceMs);
  logger.info("gateway stopped");
  return 0;
}
