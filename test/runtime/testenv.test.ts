import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/api/meta.ts";
import { isNotFound } from "../../src/runtime/errors.ts";
import { startTestEnv, type TestEnv } from "../../src/runtime/testenv.ts";

const run = promisify(execFile);

describe("startTestEnv", () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await startTestEnv();
  });
  afterAll(async () => {
    await env.stop();
  });

  it("serves the API with the system namespaces present", async () => {
    const list = await env.client.list<KubeObject>({ apiVersion: "v1", kind: "Namespace" });
    expect(list.items.map((n) => n.metadata.name).sort()).toEqual([
      "default",
      "kube-node-lease",
      "kube-public",
      "kube-system",
    ]);
  });

  it("round-trips objects through the real HTTP API", async () => {
    const cm = await env.client.create<KubeObject>({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cfg", namespace: "default" },
      data: { a: "1" },
    });
    expect(cm.metadata.uid).toBeTruthy();
    await env.client.delete({ apiVersion: "v1", kind: "ConfigMap" }, "cfg", "default");
    const gone = await env.client
      .get({ apiVersion: "v1", kind: "ConfigMap" }, "cfg", "default")
      .catch((e: unknown) => e);
    expect(isNotFound(gone)).toBe(true);
  });

  it("writes a kubeconfig kubectl can use", async () => {
    const home = mkdtempSync(join(tmpdir(), "testenv-home-"));
    const { stdout } = await run(
      "kubectl",
      ["get", "namespaces", "-o", "name", "--kubeconfig", env.kubeconfigPath],
      { env: { ...process.env, HOME: home } },
    );
    expect(stdout.split("\n")).toContain("namespace/kube-system");
  });

  it("starts several independent environments side by side", async () => {
    const other = await startTestEnv();
    try {
      await other.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "only-here", namespace: "default" },
      });
      const mine = await env.client
        .get({ apiVersion: "v1", kind: "ConfigMap" }, "only-here", "default")
        .catch((e: unknown) => e);
      expect(isNotFound(mine)).toBe(true);
    } finally {
      await other.stop();
    }
  });
});
