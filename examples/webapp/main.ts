/**
 * Runs the WebApp controller against the cluster the kubeconfig names
 * (`--kubeconfig`, else $KUBECONFIG, else ~/.kube/config, else the in-cluster
 * service account): Setpoint's apiserver or any Kubernetes cluster.
 *
 *   node --import tsx examples/webapp/main.ts [--install-crd] [--leader-elect]
 *        [--metrics-addr :8080] [--health-addr :8081]
 *        [--webhook-listen HOST:PORT --webhook-cert-dir DIR]
 *
 * With --webhook-listen it serves its validating webhook (host and path unique
 * across WebApps, webhook.ts) over TLS with tls.crt and tls.key from
 * --webhook-cert-dir, and registers it (the ValidatingWebhookConfiguration
 * `webapp-controller`, server-side applied) at https://HOST:PORT/validate-webapp
 * with ca.crt from the same directory as its caBundle; port 0 picks a free one.
 *
 * SIGINT or SIGTERM stops it gracefully: reconciles in flight finish, the lease
 * (with --leader-elect) is released, the webhook server closes (the
 * configuration stays: WebApps cannot be written until it is back).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { KubeObject } from "@setpoint/api";
import {
  type Client,
  createLogger,
  isNotFound,
  loadKubeconfig,
  Manager,
  retryOnConflict,
} from "@setpoint/runtime";
import { FIELD_MANAGER } from "./children.ts";
import { addWebAppController, CONTROLLER_NAME } from "./controller.ts";
import { webAppCrd } from "./types.ts";
import { startWebAppWebhook, WEBHOOK_PATH, webhookConfiguration } from "./webhook.ts";

/** How long `--install-crd` waits for the CRD to be Established. */
export const CRD_ESTABLISHED_TIMEOUT_MS = 30_000;
/** How often it looks. */
const CRD_POLL_MS = 100;

const CRD_TYPE = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" };

/** Applies the WebApp CRD (server-side apply) and waits until it is Established. */
export async function installWebAppCrd(client: Client, signal?: AbortSignal): Promise<void> {
  const crd = { ...CRD_TYPE, ...webAppCrd() };
  await retryOnConflict(() => client.apply(crd, { fieldManager: FIELD_MANAGER, force: true }));
  const name = crd.metadata.name ?? "";
  const deadline = Date.now() + CRD_ESTABLISHED_TIMEOUT_MS;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const got = await client.get<KubeObject>(CRD_TYPE, name);
      const conditions = (got.status as { conditions?: { type: string; status: string }[] })
        ?.conditions;
      if (conditions?.some((c) => c.type === "Established" && c.status === "True")) return;
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (Date.now() > deadline) {
      throw new Error(`CRD ${name} was not Established within ${CRD_ESTABLISHED_TIMEOUT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, CRD_POLL_MS));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: "string" },
      context: { type: "string" },
      "install-crd": { type: "boolean", default: false },
      "leader-elect": { type: "boolean", default: false },
      "leader-election-namespace": { type: "string", default: "default" },
      "metrics-addr": { type: "string" },
      "health-addr": { type: "string" },
      "webhook-listen": { type: "string" },
      "webhook-cert-dir": { type: "string" },
    },
  });
  const webhookListen = values["webhook-listen"] ? hostPort(values["webhook-listen"]) : undefined;
  const certDir = values["webhook-cert-dir"];
  if (webhookListen && !certDir) throw new Error("--webhook-listen needs --webhook-cert-dir");
  const log = createLogger({ name: CONTROLLER_NAME });
  const restConfig = loadKubeconfig({ path: values.kubeconfig, context: values.context });
  const mgr = new Manager({
    restConfig,
    logger: log,
    metricsAddr: values["metrics-addr"],
    healthAddr: values["health-addr"],
    leaderElection: values["leader-elect"]
      ? { id: `${CONTROLLER_NAME}-controller`, namespace: values["leader-election-namespace"] }
      : undefined,
  });
  const stop = new AbortController();
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      log.info({ signal: sig }, "shutting down");
      stop.abort();
    });
  }
  if (values["install-crd"]) await installWebAppCrd(mgr.client, stop.signal);
  addWebAppController(mgr);
  const webhook =
    webhookListen && certDir
      ? await startWebAppWebhook(
          mgr,
          {
            cert: readFileSync(join(certDir, "tls.crt"), "utf8"),
            key: readFileSync(join(certDir, "tls.key"), "utf8"),
          },
          webhookListen,
        )
      : undefined;
  try {
    await mgr.start(stop.signal);
    if (webhook && certDir) {
      const caBundle = readFileSync(join(certDir, "ca.crt")).toString("base64");
      await retryOnConflict(() =>
        mgr.client.apply(webhookConfiguration(webhook.url(WEBHOOK_PATH), caBundle), {
          fieldManager: FIELD_MANAGER,
          force: true,
        }),
      );
    }
    log.info(
      {
        metrics: mgr.metricsAddress,
        health: mgr.healthAddress,
        webhook: webhook?.url(WEBHOOK_PATH),
        identity: mgr.identity,
      },
      "running",
    );
    await mgr.done;
  } finally {
    await webhook?.stop();
  }
}

/** "HOST:PORT" (an IPv6 host in brackets); port 0 picks a free one. */
function hostPort(value: string): { host: string; port: number } {
  const i = value.lastIndexOf(":");
  const host = value.slice(0, i).replace(/^\[(.*)\]$/, "$1") || "127.0.0.1";
  const port = Number(value.slice(i + 1));
  if (i < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--webhook-listen wants HOST:PORT, got ${JSON.stringify(value)}`);
  }
  return { host, port };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exit(1);
  });
}
