/**
 * The apiserver part of a test environment, started by the composition root
 * (src/controlplane/): a SQLite store (in memory, or a file in a temporary dir),
 * the apiserver on a free 127.0.0.1 port (plain http, or https with a fresh CA and
 * an admin bearer token), the system namespaces, a kubeconfig, and a client.
 * startTestEnv adds the built-in controllers and CRDs to it. The project's own
 * tests also start it directly where they reach into the server (its store, its
 * registry, smaller limits, https); that is why it is a module of its own, and not
 * part of the `setpoint/testenv` API.
 */

import { Client } from "@setpoint/runtime";
import type { AuditOptions } from "../apiserver/audit/index.ts";
import type { ApiLimits } from "../apiserver/endpoints/limits.ts";
import type { ConnectionLimits, InflightLimits } from "../apiserver/server/index.ts";
import {
  type ControllerOptions,
  type ControlPlane as RunningControlPlane,
  startControlPlane as startRoot,
} from "../controlplane/index.ts";
import type { ServiceRanges } from "../registry/builtin/index.ts";
import type { Registry } from "../registry/registry.ts";

export interface ControlPlaneOptions {
  /** "memory" (default): nothing on disk; "file": a SQLite file in the temp dir. */
  storage?: "memory" | "file";
  /** Kubernetes minor version the server reports (27..33). */
  kubernetesMinor?: number;
  /** Serve https with a generated CA and require the admin bearer token (default plain http, no authentication). */
  tls?: boolean;
  /** Server bounds to shrink (watch cache window, bookmark interval, ...). */
  limits?: Partial<ApiLimits>;
  /** Connection bounds to shrink (header and request timeouts, idle keep-alive, open connections). */
  connections?: Partial<ConnectionLimits>;
  /** Requests served at once, reads and writes apart (default Kubernetes' 400 and 200). */
  inflight?: Partial<InflightLimits>;
  /** More CAs (PEM) whose client certificates authenticate. */
  clientCaCerts?: string[];
  /** An audit log: its policy, file and rotation. */
  audit?: AuditOptions;
  /** Types served (default the built-ins). */
  registry?: Registry;
  /** The store's background compaction (default on; off for a test that compacts itself). */
  compaction?: boolean;
  /** Built-in controllers to run beside the apiserver (default none). */
  controllers?: ControllerOptions;
  /** The ranges Services' cluster IPs and node ports come from. */
  serviceRanges?: ServiceRanges;
  /** ServiceAccount admission on Pod creation (default off, as envtest runs kube-apiserver). */
  serviceAccountAdmission?: boolean;
}

export interface ControlPlane extends RunningControlPlane {
  /** A client of the server as the admin, closed by stop(). */
  readonly client: Client;
}

/** Starts an apiserver for tests; see the module comment. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const plane = await startRoot({
    storage: {
      backend: "sqlite",
      file: opts.storage === "file",
      durable: false,
      compaction: opts.compaction !== false,
    },
    tls: opts.tls ?? false,
    ...(opts.kubernetesMinor ? { kubernetesMinor: opts.kubernetesMinor } : {}),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.connections ? { connections: opts.connections } : {}),
    ...(opts.inflight ? { inflight: opts.inflight } : {}),
    ...(opts.audit ? { audit: opts.audit } : {}),
    ...(opts.clientCaCerts ? { clientCaCerts: opts.clientCaCerts } : {}),
    ...(opts.controllers ? { controllers: opts.controllers } : {}),
    ...(opts.serviceRanges ? { serviceRanges: opts.serviceRanges } : {}),
    ...(opts.serviceAccountAdmission ? { serviceAccountAdmission: true } : {}),
  });
  const client = new Client(plane.config);
  return {
    ...plane,
    client,
    async stop() {
      client.close();
      await plane.stop();
    },
  };
}
