/**
 * Shared pieces of the built-in controller tests (which run against startTestEnv
 * without its built-in controllers): controller managers with short intervals,
 * objects with owner references, and polling with the controllers' longer wait.
 */

import type { KubeObject, Node, OwnerReference } from "@setpoint/api";
import { type Client, isNotFound, silentLogger } from "@setpoint/runtime";
import {
  type ControllerManager,
  type CreateControllerManagerOptions,
  createControllerManager,
} from "../../src/controllers/index.ts";
import { eventually as pollUntil } from "../helpers/poll.ts";

export const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
export const SECRET = { apiVersion: "v1", kind: "Secret" } as const;
export const NS = { apiVersion: "v1", kind: "Namespace" } as const;
export const EVENT = { apiVersion: "v1", kind: "Event" } as const;

/** How long the controller tests wait for a state: controllers act on several objects in turn. */
export const CONTROLLER_WAIT_MS = 20_000;

/** eventually() from test/helpers/poll.ts, waiting up to CONTROLLER_WAIT_MS unless told otherwise. */
export function eventually<T>(
  fn: () => T | Promise<T>,
  what = "condition",
  timeoutMs = CONTROLLER_WAIT_MS,
): Promise<NonNullable<T>> {
  return pollUntil(fn, what, timeoutMs);
}

/** An owner reference to `owner`. */
export function refTo(owner: KubeObject, extra: Partial<OwnerReference> = {}): OwnerReference {
  return {
    apiVersion: owner.apiVersion ?? "",
    kind: owner.kind ?? "",
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    ...extra,
  };
}

/** Creates a ConfigMap, optionally owned, with optional finalizers. */
export function configMap(
  client: Client,
  namespace: string,
  name: string,
  opts: { owners?: OwnerReference[]; finalizers?: string[] } = {},
): Promise<KubeObject> {
  const metadata: KubeObject["metadata"] = { name, namespace };
  if (opts.owners) metadata.ownerReferences = opts.owners;
  if (opts.finalizers) metadata.finalizers = opts.finalizers;
  return client.create({ ...CM, metadata, data: { k: name } });
}

/** The object, or undefined when it does not exist. */
export async function find(
  client: Client,
  type: { apiVersion: string; kind: string },
  name: string,
  namespace?: string,
): Promise<KubeObject | undefined> {
  try {
    return await client.get<KubeObject>(type, name, namespace);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** Whether the object is gone. */
export async function gone(
  client: Client,
  type: { apiVersion: string; kind: string },
  name: string,
  namespace?: string,
): Promise<boolean> {
  return (await find(client, type, name, namespace)) === undefined;
}

/** Removes every finalizer from an object. */
export async function clearFinalizers(
  client: Client,
  type: { apiVersion: string; kind: string },
  name: string,
  namespace?: string,
): Promise<void> {
  await client.patch(type, name, namespace, { metadata: { finalizers: null } }, { type: "merge" });
}

/** A controller manager with short intervals and a silent logger; started. */
export async function startControllers(
  opts: CreateControllerManagerOptions,
): Promise<ControllerManager> {
  const cm = createControllerManager({
    logger: silentLogger(),
    gracefulShutdownTimeoutMs: 2_000,
    ...opts,
    gc: { discoveryIntervalMs: 1_000, ...opts.gc },
    namespace: { contentRetryBaseMs: 50, contentRetryMaxMs: 400, ...opts.namespace },
  });
  await cm.start();
  return cm;
}

/** A Node's status as an agent posts it: Ready=`ready` now, `cpu` cores, 4Gi, 110 Pods. */
export function nodeStatus(cpu: string, ready: "True" | "False" = "True"): Node["status"] {
  const t = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const resources = { cpu, memory: "4Gi", pods: "110" };
  return {
    capacity: resources,
    allocatable: resources,
    conditions: [
      {
        type: "Ready",
        status: ready,
        reason: ready === "True" ? "KubeletReady" : "KubeletNotReady",
        message: "",
        lastHeartbeatTime: t,
        lastTransitionTime: t,
      },
    ],
  };
}
