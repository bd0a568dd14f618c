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

describe("kubectl auth whoami", () => {
  for (const minor of SUPPORTED_KUBERNETES_MINORS) {
    it(
      `works with kubectl 1.${minor} against a server reporting 1.${minor}`,
      async () => {
        const srv = await startE2eServer({ kubernetesMinor: minor });
        const k = new Kubectl(srv.kubeconfig);
        try {
          const out = await k.ok(["auth", "whoami", "-o", "json"]);
          const review = JSON.parse(out) as {
            apiVersion: string;
            kind: string;
            status: { userInfo: { username: string; groups: string[] } };
          };
          expect(review.kind).toBe("SelfSubjectReview");
          expect(review.apiVersion).toMatch(/^authentication\.k8s\.io\/v1(beta1|alpha1)?$/);
          expect(review.status.userInfo.username).toBe("admin");
          expect(review.status.userInfo.groups).toContain("system:authenticated");
        } finally {
          await k.close();
          await srv.close();
        }
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe("kubectl against one server: an oversized body, get crd", () => {
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

  it(
    "shows NAME and CREATED AT as a timestamp, as kube-apiserver's table does",
    async () => {
      const crd = {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "gadgets.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "gadgets", singular: "gadget", kind: "Gadget" },
          versions: [
            {
              name: "v1",
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
              },
            },
          ],
        },
      };
      await k.ok(["create", "-f", "-"], { input: JSON.stringify(crd) });
      const out = await k.ok(["get", "crd", "gadgets.example.com"]);
      const [header, row] = out.trimEnd().split("\n");
      expect(header.split(/\s{2,}/)).toEqual(["NAME", "CREATED AT"]);
      const created = await k.ok([
        "get",
        "crd",
        "gadgets.example.com",
        "-o",
        "jsonpath={.metadata.creationTimestamp}",
      ]);
      expect(row.split(/\s{2,}/)).toEqual(["gadgets.example.com", created]);
      expect(created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    },
    TEST_TIMEOUT_MS,
  );
});
