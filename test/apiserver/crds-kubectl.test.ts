import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRD_YAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: webapps.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: webapps, singular: webapp, kind: WebApp, shortNames: [wa], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.ready}
    additionalPrinterColumns:
    - {name: Image, type: string, jsonPath: .spec.image}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Max, type: integer, jsonPath: .spec.maxReplicas, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired state of the web app.
            required: [image]
            x-kubernetes-validations:
            - {rule: "self.replicas <= self.maxReplicas", message: "replicas must be at most maxReplicas"}
            properties:
              image: {type: string, description: The container image to run.}
              replicas: {type: integer, default: 1}
              maxReplicas: {type: integer, default: 5}
              probe:
                type: object
                description: How the web app is checked.
                properties:
                  path: {type: string, description: The HTTP path probed for readiness.}
          status:
            type: object
            properties:
              ready: {type: integer}
`;

function webApp(name: string, spec: string): string {
  return `apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: ${name}}\nspec: ${spec}\n`;
}

interface Run {
  code: number;
  out: string;
  err: string;
}

describe("CustomResourceDefinitions with kubectl", () => {
  let dir: string;
  let store: SqliteStore;
  let server: ApiServer;

  const kubectl = (...args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(
        "/usr/bin/kubectl",
        args,
        {
          env: {
            PATH: process.env.PATH ?? "",
            HOME: join(dir, "home"),
            KUBECONFIG: join(dir, "kubeconfig"),
          },
          timeout: 60_000,
        },
        (err, out, errOut) => {
          const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
          resolve({ code, out: String(out), err: String(errOut) });
        },
      );
    });

  const file = (name: string, text: string): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-crd-kubectl-"));
    mkdirSync(join(dir, "home"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
    file(
      "kubeconfig",
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`,
    );
    const ns = await kubectl("create", "namespace", "default");
    expect(ns.code === 0 || ns.err.includes("AlreadyExists")).toBe(true);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("installs a CRD from YAML and waits for Established", async () => {
    const applied = await kubectl("apply", "-f", file("crd.yaml", CRD_YAML));
    expect(applied.err).toBe("");
    expect(applied.out).toContain(
      "customresourcedefinition.apiextensions.k8s.io/webapps.example.com created",
    );
    const waited = await kubectl(
      "wait",
      "--for=condition=Established",
      "crd/webapps.example.com",
      "--timeout=20s",
    );
    expect(waited.out).toContain("condition met");
  });

  it("applies instances and prints their columns", async () => {
    const a = await kubectl(
      "apply",
      "-f",
      file("web.yaml", webApp("web", "{image: nginx, replicas: 2}")),
    );
    expect(a.err).toBe("");
    expect(a.out).toContain("webapp.example.com/web created");
    const got = await kubectl("get", "webapps");
    expect(got.out).toMatch(/^NAME\s+IMAGE\s+REPLICAS\s+AGE\n/);
    expect(got.out).toMatch(/\nweb\s+nginx\s+2\s+\d+s\n/);
    const short = await kubectl("get", "wa", "web", "-o", "jsonpath={.spec.maxReplicas}");
    expect(short.out).toBe("5");
  });

  it("explains the kind from its schema", async () => {
    const ex = await kubectl("explain", "webapp.spec");
    expect(ex.out).toContain("The desired state of the web app.");
    expect(ex.out).toContain("image");
    expect(ex.out).toContain("The container image to run.");
  });

  it("reports schema and CEL rule errors naming the field", async () => {
    const bad = await kubectl(
      "apply",
      "-f",
      file("bad.yaml", webApp("bad", "{image: nginx, replicas: many}")),
    );
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain(
      'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    );
    const rule = await kubectl(
      "apply",
      "-f",
      file("rule.yaml", webApp("rule", "{image: nginx, replicas: 9}")),
    );
    expect(rule.code).not.toBe(0);
    expect(rule.err).toContain(
      'spec: Invalid value: "object": replicas must be at most maxReplicas',
    );
  });

  it("patches status through /status", async () => {
    const p = await kubectl(
      "patch",
      "webapp",
      "web",
      "--subresource=status",
      "--type=merge",
      "-p",
      '{"status":{"ready":2}}',
    );
    expect(p.err).toBe("");
    const got = await kubectl("get", "webapp", "web", "-o", "jsonpath={.status.ready}");
    expect(got.out).toBe("2");
  });

  it("lists the kind under kubectl get all (category all)", async () => {
    const all = await kubectl("get", "all");
    // The category holds several kinds (Pods, Services, Deployments, ...), so kubectl
    // prefixes each name with its resource; only WebApps exist here.
    expect(all.out).toMatch(
      /^NAME\s+IMAGE\s+REPLICAS\s+AGE\nwebapp\.example\.com\/web\s+nginx\s+2\s/m,
    );
  });

  it("prints priority-1 columns only with -o wide", async () => {
    const wide = await kubectl("get", "webapps", "-o", "wide");
    expect(wide.out).toMatch(/^NAME\s+IMAGE\s+REPLICAS\s+MAX\s+AGE\n/);
    expect(wide.out).toMatch(/\nweb\s+nginx\s+2\s+5\s+\d+s\n/);
  });

  it("explains nested fields", async () => {
    const ex = await kubectl("explain", "wa.spec.probe.path");
    expect(ex.err).toBe("");
    expect(ex.out).toMatch(/FIELD:\s+path <string>/);
    expect(ex.out).toContain("The HTTP path probed for readiness.");
    const parent = await kubectl("explain", "webapp.spec.probe");
    expect(parent.out).toContain("How the web app is checked.");
  });

  it("scales through the scale subresource, with the object's rules applied", async () => {
    const scaled = await kubectl("scale", "webapp", "web", "--replicas=4");
    expect(scaled.err).toBe("");
    expect(scaled.out).toContain("webapp.example.com/web scaled");
    const got = await kubectl(
      "get",
      "wa",
      "web",
      "-o",
      "jsonpath={.spec.replicas} {.metadata.generation}",
    );
    const [replicas, generation] = got.out.split(" ");
    expect(replicas).toBe("4");
    expect(Number(generation)).toBeGreaterThan(1);
    const scale = JSON.parse(
      (await kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/webapps/web/scale"))
        .out,
    );
    expect(scale).toMatchObject({
      kind: "Scale",
      apiVersion: "autoscaling/v1",
      metadata: { name: "web", namespace: "default" },
      spec: { replicas: 4 },
      status: { replicas: 2 },
    });
    // Past maxReplicas: the CEL rule refuses it.
    const tooMany = await kubectl("scale", "webapp", "web", "--replicas=9");
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.err).toContain("replicas must be at most maxReplicas");
  });

  it("deletes the CRD and its objects", async () => {
    const del = await kubectl("delete", "crd", "webapps.example.com", "--timeout=30s");
    expect(del.out).toContain(
      'customresourcedefinition.apiextensions.k8s.io "webapps.example.com" deleted',
    );
    const left = await store.list("/registry/example.com/webapps/", {});
    expect(left.items).toEqual([]);
    const gone = await kubectl("get", "crd", "webapps.example.com");
    expect(gone.err).toContain("NotFound");
  });
});
