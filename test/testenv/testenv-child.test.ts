/**
 * startTestEnv({ process: "child" }): the control plane in a child process, so a
 * test may block its own event loop while the server answers. Here the real
 * kubectl runs synchronously (execFileSync), which against an in-process test
 * environment would hang; and stop() ends the child.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/testenv.ts";

/** The child compiles the sources through tsx on first start: slow on a loaded machine. */
const START_TIMEOUT_MS = 90_000;

describe("startTestEnv in a child process", () => {
  let env: TestEnv | undefined;
  // kubectl caches discovery in its HOME: one of its own (with the user's .npmrc).
  const home = mkdtempSync(join(tmpdir(), "testenv-child-home-"));
  const npmrc = join(homedir(), ".npmrc");
  if (existsSync(npmrc)) copyFileSync(npmrc, join(home, ".npmrc"));

  beforeAll(async () => {
    env = await startTestEnv({ process: "child" });
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    await env?.stop();
    rmSync(home, { recursive: true, force: true });
  });

  const kubectl = (args: string[]): string =>
    execFileSync("kubectl", [...args, "--kubeconfig", env?.kubeconfigPath ?? ""], {
      env: { ...process.env, HOME: home },
      encoding: "utf8",
      timeout: 60_000,
    });

  it("answers a synchronous kubectl, and the test's client sees its writes", async () => {
    expect(kubectl(["get", "namespaces", "-o", "name"]).split("\n")).toContain(
      "namespace/kube-system",
    );
    expect(kubectl(["create", "configmap", "from-sync", "--from-literal=a=1"])).toBe(
      "configmap/from-sync created\n",
    );
    const cm = await env?.client.get<KubeObject & { data?: Record<string, string> }>(
      { apiVersion: "v1", kind: "ConfigMap" },
      "from-sync",
      "default",
    );
    expect(cm?.data).toEqual({ a: "1" });
  });

  it("runs the built-in controllers there too: a dependent of a deleted owner is collected", async () => {
    const client = env?.client;
    if (!client) throw new Error("not started");
    const CM = { apiVersion: "v1", kind: "ConfigMap" };
    const owner = await client.create<KubeObject>({
      ...CM,
      metadata: { name: "owner", namespace: "default" },
    });
    await client.create({
      ...CM,
      metadata: {
        name: "dependent",
        namespace: "default",
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid ?? "" },
        ],
      },
    });
    kubectl(["delete", "configmap", "owner"]);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const left = kubectl(["get", "configmaps", "-o", "name"]);
      if (!left.includes("configmap/dependent")) break;
      if (Date.now() > deadline) throw new Error(`dependent not collected: ${left}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  it("stop() ends the child: its server no longer answers", async () => {
    const url = env?.url ?? "";
    await env?.stop();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
