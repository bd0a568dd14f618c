/**
 * The gateway `setpoint up` runs in its process (unless --no-gateway), so the
 * quick start can `curl` an app: Ingresses of the `setpoint` IngressClass served
 * on --gateway-listen (default 127.0.0.1:8080), its table in DATA/gateway. Up
 * makes the class (the cluster's default) when there is none. When the default
 * port is taken, up runs without a gateway and says so; a port asked for by
 * flag that cannot be had fails the start.
 */
import { join } from "node:path";
import type { IngressClass } from "@setpoint/api";
import { Client, isAlreadyExists, type Logger, type RestConfig } from "@setpoint/runtime";
import { DEFAULT_INGRESS_CLASS, GATEWAY_CONTROLLER_NAME, Gateway } from "../gateway/index.ts";

export const DEFAULT_GATEWAY_LISTEN = "127.0.0.1:8080";

/** Creates the `setpoint` IngressClass, marked default, unless it exists. */
export async function ensureIngressClass(config: RestConfig, logger: Logger): Promise<void> {
  const client = new Client(config);
  try {
    await client.create<IngressClass>({
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: {
        name: DEFAULT_INGRESS_CLASS,
        annotations: { "ingressclass.kubernetes.io/is-default-class": "true" },
      },
      spec: { controller: GATEWAY_CONTROLLER_NAME },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) {
      logger.warn({ err: (err as Error).message }, "could not create the setpoint IngressClass");
    }
  } finally {
    client.close();
  }
}

/** Starts the gateway; undefined (logged) when the default address is taken. */
export async function startUpGateway(opts: {
  config: RestConfig;
  /** The gateway's own credentials (default: config's). */
  gatewayConfig?: RestConfig;
  dataDir: string;
  listen: string | undefined;
  logger: Logger;
}): Promise<Gateway | undefined> {
  await ensureIngressClass(opts.config, opts.logger);
  const gw = new Gateway({
    restConfig: opts.gatewayConfig ?? opts.config,
    listen: opts.listen ?? DEFAULT_GATEWAY_LISTEN,
    dataDir: join(opts.dataDir, "gateway"),
    logger: opts.logger.child({ component: "gateway" }),
  });
  try {
    await gw.start();
  } catch (err) {
    await gw.stop(0);
    if (opts.listen === undefined && (err as NodeJS.ErrnoException).code === "EADDRINUSE") {
      opts.logger.warn(
        { address: DEFAULT_GATEWAY_LISTEN },
        "the gateway's address is in use; running without a gateway (choose one with --gateway-listen)",
      );
      return undefined;
    }
    throw err;
  }
  return gw;
}
