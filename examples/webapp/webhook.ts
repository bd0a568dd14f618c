/**
 * The WebApp's admission webhook: a WebApp's host and path must be unique
 * across all WebApps (the gateway can route a host and path to one app only).
 * The rule spans objects, so no pass of the controller can enforce it: it is
 * checked when a WebApp is written, by the controller's own validating webhook,
 * served with the runtime's WebhookServer. It reads the other WebApps from the
 * manager's informer cache, never from the apiserver on the request path, and
 * refuses writes until that cache has synced.
 *
 * Two WebApps written at the same moment may both pass (each check sees the
 * cache before the other write): the webhook narrows the window to the cache's
 * lag; it does not close it.
 */
import type { KubeObject } from "@setpoint/api";
import {
  type AdmissionHandler,
  type Informer,
  type Manager,
  validatingHandler,
  WebhookServer,
} from "@setpoint/runtime";
import { FIELD_MANAGER } from "./children.ts";
import { GROUP, VERSION, type WebApp, WebAppKind } from "./types.ts";

/** Where the server answers. */
export const WEBHOOK_PATH = "/validate-webapp";
/** The ValidatingWebhookConfiguration's name, and its one webhook's. */
export const WEBHOOK_CONFIGURATION = "webapp-controller";
export const WEBHOOK_NAME = "routes.webapps.examples.setpoint.dev";

/** A WebApp's route as the gateway matches it: the host (case-insensitive) and the path. */
export function routeOf(app: WebApp): { host: string; path: string } {
  return { host: app.spec.host.toLowerCase(), path: app.spec.path ?? "/" };
}

const keyOf = (app: WebApp) => `${app.metadata.namespace}/${app.metadata.name}`;

/** The WebApp, other than `app` itself, that already has `app`'s host and path. */
export function routeHolder(apps: readonly WebApp[], app: WebApp): WebApp | undefined {
  const want = routeOf(app);
  return apps.find((other) => {
    if (keyOf(other) === keyOf(app) || other.metadata.deletionTimestamp) return false;
    const r = routeOf(other);
    return r.host === want.host && r.path === want.path;
  });
}

/** The admission handler: refuses a WebApp whose host and path another WebApp has. */
export function validateWebApp(webApps: Informer<WebApp>): AdmissionHandler {
  return validatingHandler<WebApp>((req) => {
    const app = req.object;
    if (!app?.spec?.host) return undefined; // the schema refuses it
    // An update that leaves the route alone is not this rule's business.
    if (req.oldObject?.spec && sameRoute(req.oldObject, app)) return undefined;
    if (!webApps.hasSynced()) {
      return {
        allowed: false,
        status: {
          code: 503,
          reason: "ServiceUnavailable",
          message: "the WebApp controller has not read the WebApps yet; try again in a moment",
        },
      };
    }
    const holder = routeHolder(webApps.list(), {
      ...app,
      metadata: { ...app.metadata, namespace: app.metadata.namespace ?? req.namespace },
    });
    if (!holder) return undefined;
    const { host, path } = routeOf(app);
    return `host ${host} and path ${path} are already served by WebApp ${keyOf(holder)}; a WebApp's host and path must be unique: choose another host or path`;
  });
}

function sameRoute(a: WebApp, b: WebApp): boolean {
  const [ra, rb] = [routeOf(a), routeOf(b)];
  return ra.host === rb.host && ra.path === rb.path;
}

export interface WebhookTls {
  /** PEM of the serving certificate: its names must include the host the apiserver calls. */
  cert: string;
  key: string;
}

/**
 * Starts the webhook server on `host`:`port` (0: any free port) with the rule at
 * WEBHOOK_PATH. Call before `mgr.start`, so that the WebApp informer it reads
 * starts with the manager's cache.
 */
export async function startWebAppWebhook(
  mgr: Manager,
  tls: WebhookTls,
  listen: { host: string; port: number },
): Promise<WebhookServer> {
  const server = new WebhookServer({ cert: tls.cert, key: tls.key, ...listen });
  server.register(WEBHOOK_PATH, validateWebApp(mgr.cache.informerFor(WebAppKind)));
  await server.start();
  return server;
}

/**
 * The ValidatingWebhookConfiguration that sends WebApp creates and updates to
 * `url`. failurePolicy Fail: while the webhook cannot be reached, WebApps cannot
 * be created or changed (the rule is never skipped); status writes and deletes
 * are not sent to it.
 */
export function webhookConfiguration(url: string, caBundle: string): KubeObject {
  return {
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: {
      name: WEBHOOK_CONFIGURATION,
      labels: { "app.kubernetes.io/managed-by": FIELD_MANAGER },
    },
    webhooks: [
      {
        name: WEBHOOK_NAME,
        clientConfig: { url, caBundle },
        rules: [
          {
            operations: ["CREATE", "UPDATE"],
            apiGroups: [GROUP],
            apiVersions: [VERSION],
            resources: ["webapps"],
            scope: "Namespaced",
          },
        ],
        failurePolicy: "Fail",
        sideEffects: "None",
        timeoutSeconds: 5,
        admissionReviewVersions: ["v1"],
      },
    ],
  } as KubeObject;
}
