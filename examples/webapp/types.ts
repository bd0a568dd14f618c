/**
 * The WebApp custom resource (examples.setpoint.dev/v1alpha1): its wire types,
 * the kinds the controller works with, and its CustomResourceDefinition (read
 * from crd.yaml beside this file).
 */
import { readFileSync } from "node:fs";
import type { Condition, Deployment, Ingress, KubeObject, Service } from "@setpoint/api";
import { kind } from "@setpoint/runtime";
import { parse } from "yaml";

export const GROUP = "examples.setpoint.dev";
export const VERSION = "v1alpha1";

export const WebAppKind = kind<WebApp>(`${GROUP}/${VERSION}`, "WebApp");
export const DeploymentKind = kind<Deployment>("apps/v1", "Deployment");
export const ServiceKind = kind<Service>("v1", "Service");
export const IngressKind = kind<Ingress>("networking.k8s.io/v1", "Ingress");

export interface WebAppSpec {
  image: string;
  /** Defaulted to 1 by the schema. */
  replicas?: number;
  /** Defaulted to 8080 by the schema. */
  port?: number;
  host: string;
  /** Defaulted to "/" by the schema. */
  path?: string;
  env?: { name: string; value?: string }[];
  /** Called once, when the app is first Ready. */
  notify?: { url: string };
}

export interface WebAppStatus {
  /** The metadata.generation this status was computed from. */
  observedGeneration?: number;
  readyReplicas?: number;
  /** Where the gateway serves the app. */
  url?: string;
  /** Ready and Progressing. */
  conditions?: Condition[];
}

export interface WebApp extends KubeObject {
  spec: WebAppSpec;
  status?: WebAppStatus;
}

/** The CustomResourceDefinition of WebApps. */
export function webAppCrd(): KubeObject {
  return parse(readFileSync(new URL("./crd.yaml", import.meta.url), "utf8")) as KubeObject;
}
