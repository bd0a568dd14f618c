/**
 * Server-side apply end to end with the real kubectl: `kubectl apply
 * --server-side` creating and updating, conflicts between managers and the help
 * kubectl prints for them, --force-conflicts, removal of dropped fields (kept
 * when shared), list-map merging on a CRD, migration from client-side apply,
 * managedFields shown with --show-managed-fields, no write for an unchanged
 * configuration, and apply through the status subresource.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject, ManagedFieldsEntry } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { type ApiServer, startApiServer } from "../../src/apiserver/server/index.ts";
import { SqliteStore } from "../../src/storage/sqlite/index.ts";

const CRD_YAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gateways.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gateways, singular: gateway, kind: Gateway, shortNames: [gw]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              listeners:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
              ready: {type: integer}
`;

function configMap(name: string, data: Record<string, string>, extra = ""): string {
  const lines = Object.entries(data).map(([k, v]) => `  ${k}: "${v}"`);
  return `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n${extra}data:\n${lines.join("\n")}\n`;
}

function gateway(body: string): string {
  return `apiVersion: example.com/v1\nkind: Gateway\nmetadata: {name: edge}\n${body}\n`;
}

interface Run {
  code: number;
  out: string;
  err: string;
}

/** The fields of a managedFields entry as a flat list of FieldsV1 paths, e.g. "f:data.f:color". */
function fieldPaths(entry: ManagedFieldsEntry | undefined): string[] {
  const out: string[] = [];
  const walk = (node: unknown, path: string) => {
    if (typeof node !== "object" || node === null) return;
    for (const [k, v] of Object.entries(node)) {
      if (k === ".") continue;
      const p = path ? `${path}.${k}` : k;
      out.push(p);
      walk(v, p);
    }
  };
  walk(entry?.fieldsV1, "");
  return out.sort();
}

describe("server-side apply with kubectl", () => {
  let dir: string;
  let store: SqliteStore;
  let server: ApiServer;

  const kubectl = (args: string[], stdin?: string): Promise<Run> =>
    new Promise((resolve) => {
      const child = execFile(
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
      child.stdin?.end(stdin ?? "");
    });

  /** `kubectl apply --server-side -f -` with `manifest`, plus `args`. */
  const apply = (manifest: string, ...args: string[]) =>
    kubectl(["apply", "--server-side", "-f", "-", ...args], manifest);

  /** The object as `kubectl get -o yaml --show-managed-fields` prints it. */
  const getYaml = async (what: string[], showManaged = true): Promise<KubeObject> => {
    const r = await kubectl([
      "get",
      ...what,
      "-o",
      "yaml",
      ...(showManaged ? ["--show-managed-fields"] : []),
    ]);
    expect(r.err).toBe("");
    return parse(r.out) as KubeObject;
  };

  const entry = (obj: KubeObject, manager: string, subresource?: string) =>
    obj.metadata.managedFields?.find(
      (e) => e.manager === manager && (e.subresource ?? undefined) === subresource,
    );

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "setpoint-ssa-kubectl-"));
    mkdirSync(join(dir, "home"));
    store = SqliteStore.open(join(dir, "data.db"), { durable: false });
    server = await startApiServer({ store, port: 0 });
    writeFileSync(
      join(dir, "kubeconfig"),
      `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`,
    );
    const ns = await kubectl(["create", "namespace", "default"]);
    expect(ns.code === 0 || ns.err.includes("AlreadyExists")).toBe(true);
  });

  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates (201) and updates (200) with kubectl apply --server-side", async () => {
    const created = await apply(configMap("web", { color: "red", size: "big" }), "-v=6");
    expect(created.code).toBe(0);
    expect(created.out).toContain("configmap/web serverside-applied");
    expect(created.err).toMatch(
      /PATCH \S+\/configmaps\/web\?fieldManager=kubectl&\S*force=false 201 Created/,
    );
    const updated = await apply(configMap("web", { color: "blue", size: "big" }), "-v=6");
    expect(updated.code).toBe(0);
    expect(updated.err).toMatch(/PATCH \S+\/configmaps\/web\?\S+ 200 OK/);
    const got = await getYaml(["configmap", "web"], false);
    expect(got.data).toEqual({ color: "blue", size: "big" });
  });

  it("shows managedFields with --show-managed-fields only", async () => {
    const shown = await getYaml(["configmap", "web"]);
    const mine = entry(shown, "kubectl");
    expect(mine).toMatchObject({ operation: "Apply", apiVersion: "v1", fieldsType: "FieldsV1" });
    expect(fieldPaths(mine)).toEqual(["f:data", "f:data.f:color", "f:data.f:size"]);
    const hidden = await getYaml(["configmap", "web"], false);
    expect(hidden.metadata.managedFields).toBeUndefined();
  });

  it("writes nothing when the configuration is unchanged", async () => {
    const before = await getYaml(["configmap", "web"]);
    const revision = await store.currentRevision();
    const again = await apply(configMap("web", { color: "blue", size: "big" }));
    expect(again.code).toBe(0);
    const after = await getYaml(["configmap", "web"]);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.metadata.managedFields).toEqual(before.metadata.managedFields);
    expect(await store.currentRevision()).toBe(revision);
  });

  it("reports a conflict between managers as kubectl expects, and --force-conflicts takes the field", async () => {
    expect(
      (await apply(configMap("two", { k: "1", shared: "s", onlya: "x" }), "--field-manager", "a"))
        .code,
    ).toBe(0);
    const conflict = await apply(configMap("two", { k: "2", shared: "s" }), "--field-manager", "b");
    expect(conflict.code).not.toBe(0);
    expect(conflict.err).toContain('Apply failed with 1 conflict: conflict with "a": .data.k');
    expect(conflict.err).toContain(
      "Please review the fields above--they currently have other managers.",
    );
    expect(conflict.err).toContain("--force-conflicts");
    expect((await getYaml(["configmap", "two"], false)).data).toMatchObject({ k: "1" });

    const forced = await apply(
      configMap("two", { k: "2", shared: "s" }),
      "--field-manager",
      "b",
      "--force-conflicts",
    );
    expect(forced.code).toBe(0);
    const got = await getYaml(["configmap", "two"]);
    expect(got.data).toEqual({ k: "2", shared: "s", onlya: "x" });
    expect(fieldPaths(entry(got, "a"))).toEqual(["f:data", "f:data.f:onlya", "f:data.f:shared"]);
    expect(fieldPaths(entry(got, "b"))).toEqual(["f:data", "f:data.f:k", "f:data.f:shared"]);
  });

  it("removes a field dropped from the manifest unless another manager owns it", async () => {
    // a owned onlya alone and shared with b: dropping both removes onlya only.
    const dropped = await apply(configMap("two", { placeholder: "p" }), "--field-manager", "a");
    expect(dropped.code).toBe(0);
    const got = await getYaml(["configmap", "two"]);
    expect(got.data).toEqual({ k: "2", shared: "s", placeholder: "p" });
    expect(fieldPaths(entry(got, "a"))).toEqual(["f:data", "f:data.f:placeholder"]);
    expect(fieldPaths(entry(got, "b"))).toEqual(["f:data", "f:data.f:k", "f:data.f:shared"]);
  });

  it("merges the items of a map-type list per manager", async () => {
    const crd = await kubectl(["apply", "-f", "-"], CRD_YAML);
    expect(crd.code).toBe(0);
    const waited = await kubectl([
      "wait",
      "--for=condition=Established",
      "crd/gateways.example.com",
      "--timeout=20s",
    ]);
    expect(waited.out).toContain("condition met");
    const a = await apply(
      gateway("spec: {replicas: 1, listeners: [{name: http, port: 80}]}"),
      "--field-manager",
      "a",
    );
    expect(a.err).toBe("");
    expect(a.out).toContain("gateway.example.com/edge serverside-applied");
    const b = await apply(
      gateway("spec: {listeners: [{name: https, port: 443}]}"),
      "--field-manager",
      "b",
    );
    expect(b.code).toBe(0);
    let got = await getYaml(["gw", "edge"]);
    expect((got.spec as { listeners: unknown }).listeners).toEqual([
      { name: "http", port: 80 },
      { name: "https", port: 443 },
    ]);
    expect(fieldPaths(entry(got, "b"))).toEqual([
      "f:spec",
      "f:spec.f:listeners",
      'f:spec.f:listeners.k:{"name":"https"}',
      'f:spec.f:listeners.k:{"name":"https"}.f:name',
      'f:spec.f:listeners.k:{"name":"https"}.f:port',
    ]);

    // b changing a's item conflicts, naming the item.
    const clash = await apply(
      gateway("spec: {listeners: [{name: https, port: 443}, {name: http, port: 8080}]}"),
      "--field-manager",
      "b",
    );
    expect(clash.code).not.toBe(0);
    expect(clash.err).toContain('conflict with "a": .spec.listeners[name="http"].port');

    // a dropping its item removes it; b's item stays.
    expect((await apply(gateway("spec: {replicas: 1}"), "--field-manager", "a")).code).toBe(0);
    got = await getYaml(["gw", "edge"]);
    expect((got.spec as { listeners: unknown }).listeners).toEqual([{ name: "https", port: 443 }]);
  });

  it("records status applied through --subresource=status under its own entry", async () => {
    const before = await getYaml(["gw", "edge"]);
    const rv = before.metadata.resourceVersion;
    const r = await apply(
      gateway("status: {phase: Ready, ready: 1}"),
      "--subresource=status",
      "--field-manager",
      "ctrl",
    );
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const got = await getYaml(["gw", "edge"]);
    expect(got.metadata.resourceVersion).not.toBe(rv);
    expect(got.status).toEqual({ phase: "Ready", ready: 1 });
    const status = entry(got, "ctrl", "status");
    expect(status).toMatchObject({ operation: "Apply", subresource: "status" });
    expect(fieldPaths(status)).toEqual(["f:status", "f:status.f:phase", "f:status.f:ready"]);
    // A status write does not move the generation.
    expect(got.metadata.generation).toBe(before.metadata.generation);

    // Status in a main-resource apply is neither written nor owned.
    const main = await apply(
      gateway("spec: {replicas: 1}\nstatus: {phase: Broken}"),
      "--field-manager",
      "a",
    );
    expect(main.code).toBe(0);
    const after = await getYaml(["gw", "edge"]);
    expect((after.status as { phase: string }).phase).toBe("Ready");
    expect(fieldPaths(entry(after, "a"))).toEqual(["f:spec", "f:spec.f:replicas"]);
  });

  it("migrates from client-side apply and then removes a dropped field", async () => {
    const both = configMap("mig", { keep: "1", drop: "2" }, "  labels: {team: a}\n");
    const csa = await kubectl(["apply", "-f", "-"], both);
    expect(csa.out).toContain("configmap/mig created");
    let got = await getYaml(["configmap", "mig"]);
    expect(
      got.metadata.annotations?.["kubectl.kubernetes.io/last-applied-configuration"],
    ).toBeDefined();
    expect(entry(got, "kubectl-client-side-apply")).toMatchObject({ operation: "Update" });

    const ssa = await apply(both);
    expect(ssa.code).toBe(0);
    got = await getYaml(["configmap", "mig"]);
    expect(entry(got, "kubectl-client-side-apply")).toBeUndefined();
    expect(fieldPaths(entry(got, "kubectl"))).toEqual(
      expect.arrayContaining(["f:data.f:drop", "f:data.f:keep", "f:metadata.f:labels.f:team"]),
    );

    const dropped = await apply(configMap("mig", { keep: "1" }, "  labels: {team: a}\n"));
    expect(dropped.code).toBe(0);
    got = await getYaml(["configmap", "mig"], false);
    expect(got.data).toEqual({ keep: "1" });
    expect(got.metadata.labels).toEqual({ team: "a" });
  });
});
