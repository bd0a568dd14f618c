import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { KubeObject } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { isNotFound } from "../../packages/runtime/src/client/errors.ts";
import { startTestEnv, type TestEnv } from "../../src/testenv/testenv.ts";

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

  it("finishes deleting a namespace and collects dependents of a deleted owner", async () => {
    const ns = { apiVersion: "v1", kind: "Namespace" };
    const cm = { apiVersion: "v1", kind: "ConfigMap" };
    await env.client.create({ ...ns, metadata: { name: "doomed" } });
    await env.client.create({ ...cm, metadata: { name: "inside", namespace: "doomed" } });
    const owner = await env.client.create<KubeObject>({
      ...cm,
      metadata: { name: "owner", namespace: "default" },
    });
    await env.client.create({
      ...cm,
      metadata: {
        name: "dependent",
        namespace: "default",
        ownerReferences: [
          { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid! },
        ],
      },
    });
    await env.client.delete(ns, "doomed");
    await env.client.delete(cm, "owner", "default");
    const gone = async (type: typeof ns, name: string, namespace?: string) =>
      isNotFound(await env.client.get(type, name, namespace).catch((e: unknown) => e));
    await vi.waitFor(
      async () => {
        expect(await gone(ns, "doomed")).toBe(true);
        expect(await gone(cm, "dependent", "default")).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
  });

  it("runs the apiserver alone with controllers: false", async () => {
    const bare = await startTestEnv({ controllers: false });
    try {
      const ns = { apiVersion: "v1", kind: "Namespace" };
      await bare.client.create({ ...ns, metadata: { name: "stays" } });
      await bare.client.delete(ns, "stays");
      await new Promise((r) => setTimeout(r, 300));
      const still = await bare.client.get<KubeObject>(ns, "stays");
      expect(still.metadata.deletionTimestamp).toBeTruthy();
    } finally {
      await bare.stop();
    }
  });

  it("refuses an unknown controller name", async () => {
    await expect(startTestEnv({ controllers: ["garbage-colector"] })).rejects.toThrow(
      /unknown controller/,
    );
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
