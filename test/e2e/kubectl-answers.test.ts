/**
 * Answers that kubectl prints as it would from kube-apiserver: an oversized body's
 * 413 (read by kubectl while it is still sending), `kubectl auth whoami` with every
 * kubectl the dispatcher offers, and `kubectl get crd`'s columns.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SUPPORTED_KUBERNETES_MINORS } from "../../src/apiserver/server/server.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { type E2eServer, startE2eServer } from "./helpers/server.ts";

const TEST_TIMEOUT_MS = 60_000;

describe("kubectl and an oversized body", () => {
  let srv: E2eServer;
  let k: Kubectl;
  beforeAll(async () => {
    srv = await startE2eServer();
    k = new Kubectl(srv.kubeconfig);
  });
  afterAll(async () => {
    await k?.close();
    await srv?.close();
  });

  it(
    "prints the 413 Status, not a broken pipe, for a 4 MiB ConfigMap",
    async () => {
      const big = "x".repeat(4 * 1024 * 1024);
      const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  big: ${big}\n`;
      for (const verb of ["create", "apply"]) {
        const r = await k.fails([verb, "-f", "-"], { input: yaml });
        expect(r.stderr, verb).toContain("Request entity too large: limit is 3145728");
        expect(r.stderr, verb).not.toMatch(/broken pipe|connection reset/);
      }
      // The server goes on serving.
      expect(await k.ok(["get", "ns", "default", "-o", "name"])).toBe("namespace/default\n");
    },
    TEST_TIMEOUT_MS,
  );
});
