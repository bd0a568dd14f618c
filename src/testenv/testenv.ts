/**
 * The test environment: a real Setpoint control plane started in process — the
 * apiserver on an in-memory (or temporary file) SQLite store, reachable over real
 * HTTP on a free port, and by default the built-in garbage collector and namespace
 * controller beside it, so owned objects are collected and deleted namespaces
 * finish deleting, as on a real cluster. Controllers under test talk to it through
 * the same client they use in production. Starting one takes tens of milliseconds.
 *
 * The server answers on the test's own event loop: a test that blocks that loop
 * while waiting for it (`execFileSync("kubectl", ...)`) hangs. Such a test asks for
 * `process: "child"`, and the control plane runs in a child process of its own
 * (child-process.ts).
 *
 * It starts the control plane through the composition root (src/controlplane/),
 * as `setpoint up` does; none of the layers it composes imports it.
 *
 * ```ts
 * const env = await startTestEnv();
 * const mgr = new Manager({ client: env.client });
 * // ... register controllers, start, assert on env.client.get(...)
 * await env.stop();
 * ```
 */
import type { KubeObject } from "@setpoint/api";
import { type Client, createLogger, silentLogger } from "@setpoint/runtime";
import {
  BUILTIN_CONTROLLER_NAMES,
  checkControllerNames,
  GARBAGE_COLLECTOR,
  NAMESPACE_CONTROLLER,
} from "../controllers/index.ts";
import { startTestEnvInChild } from "./child-process.ts";
import { startControlPlane } from "./controlplane.ts";
import type { TestEnv, TestEnvOptions } from "./test-env-types.ts";

export type { TestEnv, TestEnvOptions } from "./test-env-types.ts";

/** Built-in controllers a test environment runs unless told otherwise. */
export const DEFAULT_TESTENV_CONTROLLERS: readonly string[] = [
  GARBAGE_COLLECTOR,
  NAMESPACE_CONTROLLER,
];

/** How long startTestEnv waits for installed CRDs to be served. */
export const CRD_READY_TIMEOUT_MS = 10_000;

function controllersToRun(opt: TestEnvOptions["controllers"]): readonly string[] {
  if (opt === undefined || opt === true) return DEFAULT_TESTENV_CONTROLLERS;
  if (opt === false) return [];
  checkControllerNames(opt);
  return opt;
}

export async function startTestEnv(opts: TestEnvOptions = {}): Promise<TestEnv> {
  const run = controllersToRun(opts.controllers);
  if (opts.process === "child") return startTestEnvInChild(opts);
  const plane = await startControlPlane({
    ...(opts.storage ? { storage: opts.storage } : {}),
    ...(opts.kubernetesMinor ? { kubernetesMinor: opts.kubernetesMinor } : {}),
    ...(run.length > 0
      ? {
          controllers: {
            disabled: BUILTIN_CONTROLLER_NAMES.filter((name) => !run.includes(name)),
            logger: process.env.SETPOINT_TESTENV_LOG
              ? createLogger({ level: "debug" })
              : silentLogger(),
          },
        }
      : {}),
  });
  const { url, config, client, kubeconfigPath } = plane;
  const stop = (): Promise<void> => plane.stop();
  try {
    for (const crd of opts.crds ?? []) await installCrd(client, crd);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, config, client, kubeconfigPath, stop };
}

const CRD_TYPE = { apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition" };

/** Creates a CRD and waits until its Established condition is True. */
export async function installCrd(client: Client, crd: KubeObject): Promise<void> {
  await client.create({ ...CRD_TYPE, ...crd });
  const name = crd.metadata.name ?? "";
  const deadline = Date.now() + CRD_READY_TIMEOUT_MS;
  for (;;) {
    const got = await client.get<KubeObject>(CRD_TYPE, name);
    const conditions = (got.status as { conditions?: { type: string; status: string }[] })
      ?.conditions;
    if (conditions?.some((c) => c.type === "Established" && c.status === "True")) return;
    if (Date.now() > deadline) throw new Error(`CRD ${name} was not established in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
