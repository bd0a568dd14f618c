/**
 * main.ts as a user runs it: a separate process given only a kubeconfig. It
 * installs the CRD, takes the lease, reconciles, and on SIGTERM stops cleanly
 * and gives the lease up.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "@setpoint/api";
import { isNotFound } from "@setpoint/runtime";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { ConfigMapKind, configMapSet } from "./types.ts";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const WAIT = { timeout: 15_000, interval: 50 };

let env: TestEnv;
let child: ChildProcess | undefined;
let output = "";

beforeAll(async () => {
  env = await startTestEnv();
});
afterAll(async () => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  await env?.stop();
});

it("installs the CRD, reconciles, and shuts down on SIGTERM releasing its lease", async () => {
  child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      MAIN,
      "--install-crd",
      "--leader-elect",
      "--kubeconfig",
      env.kubeconfigPath,
    ],
    { env: { ...process.env, SETPOINT_LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => child?.once("exit", (code) => r(code)));

  await env.client.create({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "from-main", labels: { demo: "yes" } },
  });
  // The set can be created once the process has installed the CRD.
  await vi.waitFor(
    () =>
      env.client.create(
        configMapSet("main-demo", {
          namespaceSelector: { matchLabels: { demo: "yes" } },
          template: { data: { hello: "world" } },
        }),
      ),
    WAIT,
  );
  await vi.waitFor(async () => {
    const cm = await env.client.get(ConfigMapKind, "main-demo", "from-main");
    expect(cm.data).toEqual({ hello: "world" });
  }, WAIT);
  const lease = await env.client.get<KubeObject & { spec?: { holderIdentity?: string } }>(
    { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
    "configmapset-controller",
    "default",
  );
  expect(lease.spec?.holderIdentity).toBeTruthy();

  child.kill("SIGTERM");
  expect(await exited, output).toBe(0);
  expect(output).toContain("shutting down");
  const after = await env.client
    .get<KubeObject & { spec?: { holderIdentity?: string } }>(
      { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
      "configmapset-controller",
      "default",
    )
    .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
  expect(after?.spec?.holderIdentity ?? "").toBe("");
});
