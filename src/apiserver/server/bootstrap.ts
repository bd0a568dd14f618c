/**
 * What a fresh control plane must hold before anyone uses it: the system
 * namespaces, created through the server's own HTTP API, and RBAC's bootstrap
 * roles and bindings, created through the resource store before the server
 * listens (no backdoor into storage either way: every rule that applies to a
 * user's write applies here too).
 */
import http from "node:http";
import https from "node:https";
import { type KubeObject, StatusError } from "@setpoint/api";
import {
  BOOTSTRAP_CLUSTER_ROLE_BINDINGS,
  BOOTSTRAP_CLUSTER_ROLES,
  RBAC_GROUP,
} from "../../registry/builtin/rbac/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { ResourceStore } from "../store/index.ts";

/** Namespaces every control plane has, as in Kubernetes. */
export const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

export interface LoopbackTarget {
  url: string;
  caCert?: string;
  token?: string;
}

/** One JSON request to the server itself; resolves with the status code and parsed body. */
export function loopbackRequest(
  target: LoopbackTarget,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ code: number; body: unknown }> {
  const url = new URL(path, target.url);
  const data = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { Accept: "application/json" };
  if (data !== undefined) headers["Content-Type"] = "application/json";
  if (target.token) headers.Authorization = `Bearer ${target.token}`;
  const options: https.RequestOptions = { method, headers };
  if (target.caCert) options.ca = target.caCert;
  const request = url.protocol === "https:" ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // Not JSON: keep the text.
        }
        resolve({ code: res.statusCode ?? 0, body: parsed });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(data);
  });
}

/** Creates the system namespaces that are missing. */
export async function ensureSystemNamespaces(target: LoopbackTarget): Promise<void> {
  for (const name of SYSTEM_NAMESPACES) {
    const res = await loopbackRequest(target, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name },
    });
    if (res.code !== 201 && res.code !== 409) {
      throw new Error(`creating namespace ${name}: HTTP ${res.code} ${JSON.stringify(res.body)}`);
    }
  }
}

/**
 * Creates the bootstrap ClusterRoles and ClusterRoleBindings that are missing
 * (ones already there are left as they are, also when a person changed them).
 */
export async function ensureBootstrapPolicy(
  registry: Registry,
  storeFor: (def: ResourceDefinition) => ResourceStore,
): Promise<void> {
  const sets: [string, readonly KubeObject[]][] = [
    ["clusterroles", BOOTSTRAP_CLUSTER_ROLES],
    ["clusterrolebindings", BOOTSTRAP_CLUSTER_ROLE_BINDINGS],
  ];
  for (const [plural, objects] of sets) {
    const def = registry.get(RBAC_GROUP, plural);
    if (!def) continue;
    const store = storeFor(def);
    for (const obj of objects) {
      try {
        await store.create(structuredClone(obj), { dryRun: false, manager: BOOTSTRAP_MANAGER });
      } catch (err) {
        if (!(err instanceof StatusError && err.code === 409)) throw err;
      }
    }
  }
}

/** The field manager of the bootstrap objects. */
export const BOOTSTRAP_MANAGER = "setpoint-apiserver";
