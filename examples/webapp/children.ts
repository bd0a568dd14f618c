/**
 * What a WebApp owns, as the controller states it with server-side apply: only
 * the fields it manages (everything else on these objects, defaults and other
 * writers' fields, is left alone). Each is named after the WebApp and
 * controlled by it (ownerReference by UID), so the garbage collector deletes
 * them with it. README.md lists these fields: the managed boundary.
 */
import type { Deployment, Ingress, KubeObject, Service } from "@setpoint/api";
import { setControllerReference } from "@setpoint/runtime";
import type { WebApp } from "./types.ts";

/** The field manager the controller writes under. */
export const FIELD_MANAGER = "webapp-controller";
/** The IngressClass of Setpoint's gateway. */
export const INGRESS_CLASS = "setpoint";
/** The port the Service exposes (to the app's own port). */
export const SERVICE_PORT = 80;
/** The container's name in the Pod template. */
export const CONTAINER = "app";

/** Labels on everything a WebApp owns; the selector is the first two. */
export function labelsOf(app: WebApp): Record<string, string> {
  return {
    "app.kubernetes.io/name": "webapp",
    "app.kubernetes.io/instance": app.metadata.name ?? "",
    "app.kubernetes.io/managed-by": FIELD_MANAGER,
  };
}

function selectorOf(app: WebApp): Record<string, string> {
  const { "app.kubernetes.io/managed-by": _, ...selector } = labelsOf(app);
  return selector;
}

function owned<T extends KubeObject>(app: WebApp, obj: T): T {
  setControllerReference(app, obj);
  return obj;
}

function meta(app: WebApp) {
  return { name: app.metadata.name, namespace: app.metadata.namespace, labels: labelsOf(app) };
}

export function desiredDeployment(app: WebApp): Deployment {
  const port = app.spec.port ?? 8080;
  const env = [
    { name: "PORT", value: String(port) },
    ...(app.spec.env ?? []).filter((e) => e.name !== "PORT"),
  ];
  return owned(app, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(app),
    spec: {
      replicas: app.spec.replicas ?? 1,
      selector: { matchLabels: selectorOf(app) },
      template: {
        metadata: { labels: labelsOf(app) },
        spec: {
          containers: [
            {
              name: CONTAINER,
              image: app.spec.image,
              // The list's keys are containerPort and protocol: state both, so a
              // re-apply matches the stored (defaulted) item instead of adding one.
              ports: [{ name: "http", containerPort: port, protocol: "TCP" }],
              env,
              // Probed every second: a new replica takes traffic (and a rollout moves on) soon after it answers.
              readinessProbe: { httpGet: { path: "/", port }, periodSeconds: 1 },
            },
          ],
        },
      },
    },
  } as Deployment);
}

export function desiredService(app: WebApp): Service {
  return owned(app, {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(app),
    spec: {
      selector: selectorOf(app),
      ports: [
        { name: "http", port: SERVICE_PORT, protocol: "TCP", targetPort: app.spec.port ?? 8080 },
      ],
    },
  } as Service);
}

export function desiredIngress(app: WebApp): Ingress {
  return owned(app, {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: meta(app),
    spec: {
      ingressClassName: INGRESS_CLASS,
      rules: [
        {
          host: app.spec.host,
          http: {
            paths: [
              {
                path: app.spec.path ?? "/",
                pathType: "Prefix",
                backend: {
                  service: { name: app.metadata.name ?? "", port: { number: SERVICE_PORT } },
                },
              },
            ],
          },
        },
      ],
    },
  } as Ingress);
}

/** Where the gateway serves the app. */
export function urlOf(app: WebApp): string {
  return `http://${app.spec.host}${app.spec.path ?? "/"}`;
}
