/**
 * The managed boundary with the real kubectl: a write by another field manager
 * that changes fields an object's controller manages (the manager that owns its
 * controlling ownerReference) is answered with a Warning header, which kubectl
 * edit, patch, scale and apply print; writes that touch only other fields, and
 * the controller's own writes, get none. `setpoint doctor KIND/NAME` shows the
 * managing controller and the fields on each side of the boundary.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ManagedReport } from "../../src/cli/inspect/managed.ts";
import { runCli } from "../cli/helpers.ts";
import { schemalessCrd } from "../helpers/crd.ts";

interface Run {
  code: number;
  out: string;
  err: string;
}

let env: TestEnv;
let dir: string;
let site: KubeObject;

function kubectl(args: string[], opts: { stdin?: string; editor?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      "/usr/bin/kubectl",
      args,
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: join(dir, "home"),
          KUBECONFIG: env.kubeconfigPath,
          ...(opts.editor ? { KUBE_EDITOR: opts.editor } : {}),
        },
        timeout: 60_000,
      },
      (err, out, errOut) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, out: String(out), err: String(errOut) });
      },
    );
    child.stdin?.end(opts.stdin ?? "");
  });
}

/** The warnings kubectl printed. */
function warnings(r: Run): string[] {
  return r.err
    .split("\n")
    .filter((l) => l.startsWith("Warning: "))
    .map((l) => l.slice("Warning: ".length));
}

const CONTROLLER = "site-controller";

function deployment(replicas: number, image: string): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "web",
      namespace: "default",
      labels: { app: "web" },
      annotations: { "example.com/site": "web" },
      ownerReferences: [
        {
          apiVersion: "example.com/v1",
          kind: "Site",
          name: "web",
          uid: site.metadata.uid ?? "",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      replicas,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image }] },
      },
    },
  };
}

const REVERTED =
  /^Deployment default\/web is managed by its controller Site\/web \(field manager "site-controller"\); this write changed a field it manages \((.+)\), which will be reverted when the controller next reconciles; to change it for good, change Site\/web instead$/;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "setpoint-managed-boundary-"));
  mkdirSync(join(dir, "home"));
  env = await startTestEnv({ crds: [schemalessCrd("sites", "Site")], controllers: false });
  site = await env.client.create({
    apiVersion: "example.com/v1",
    kind: "Site",
    metadata: { name: "web", namespace: "default" },
    spec: { replicas: 2 },
  });
  // The controller's server-side apply: it owns replicas, selector, template and the reference.
  await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER });
});

afterAll(async () => {
  await env?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a write to fields an object's controller manages", () => {
  it("kubectl scale prints a warning naming the controller, the field and where to change it", async () => {
    const r = await kubectl(["scale", "deployment", "web", "--replicas=5"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain("deployment.apps/web scaled");
    const w = warnings(r);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(REVERTED);
    expect(REVERTED.exec(w[0])?.[1]).toBe(".spec.replicas");
  });

  it("kubectl patch prints it for a container's image", async () => {
    const r = await kubectl([
      "patch",
      "deployment",
      "web",
      "-p",
      '{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"hello:2"}]}}}}',
    ]);
    expect(r.code, r.err).toBe(0);
    const w = warnings(r);
    expect(w).toHaveLength(1);
    expect(REVERTED.exec(w[0])?.[1]).toBe('.spec.template.spec.containers[name="web"].image');
  });

  it("kubectl edit prints it", async () => {
    // The controller sets its fields back (as its next pass would).
    await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER, force: true });
    const r = await kubectl(["edit", "deployment", "web"], {
      editor: "sed -i -e 's/^  replicas: 2$/  replicas: 4/'",
    });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain("deployment.apps/web edited");
    expect(warnings(r).map((w) => REVERTED.exec(w)?.[1])).toEqual([".spec.replicas"]);
  });

  it("kubectl apply --server-side --force-conflicts prints it; without force it is a conflict", async () => {
    await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER, force: true });
    const manifest = JSON.stringify({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default" },
      spec: { replicas: 9 },
    });
    const refused = await kubectl(["apply", "--server-side", "-f", "-"], { stdin: manifest });
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain(`conflict with "${CONTROLLER}"`);
    const forced = await kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
      stdin: manifest,
    });
    expect(forced.code, forced.err).toBe(0);
    expect(warnings(forced).map((w) => REVERTED.exec(w)?.[1])).toEqual([".spec.replicas"]);
  });

  it("names several fields, the first three and a count", async () => {
    await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER, force: true });
    const r = await kubectl([
      "patch",
      "deployment",
      "web",
      "--type=json",
      "-p",
      JSON.stringify([
        { op: "replace", path: "/metadata/labels/app", value: "x" },
        { op: "replace", path: "/metadata/annotations/example.com~1site", value: "x" },
        { op: "replace", path: "/spec/replicas", value: 3 },
        { op: "replace", path: "/spec/template/spec/containers/0/image", value: "hello:9" },
      ]),
      "--dry-run=server",
    ]);
    const w = warnings(r);
    expect(w.length, r.err).toBeGreaterThan(0);
    expect(w).toEqual([
      'Deployment default/web is managed by its controller Site/web (field manager "site-controller"); this write changed fields it manages (.metadata.annotations.example.com/site, .metadata.labels.app, .spec.replicas and 1 more), which will be reverted when the controller next reconciles; to change them for good, change Site/web instead',
    ]);
  });

  it("no warning for fields the controller does not manage, nor for the controller's own writes", async () => {
    await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER, force: true });
    const labelled = await kubectl(["label", "deployment", "web", "team=blue"]);
    expect(labelled.code, labelled.err).toBe(0);
    expect(warnings(labelled)).toEqual([]);
    const annotated = await kubectl(["annotate", "deployment", "web", "note=hi"]);
    expect(warnings(annotated)).toEqual([]);
    // The controller's own write changes what it manages: no warning.
    const res = await env.client.raw("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", {
      query: new URLSearchParams({ fieldManager: CONTROLLER, force: "true" }),
      contentType: "application/apply-patch+yaml",
      body: JSON.stringify(deployment(3, "hello:1")),
    });
    expect(res.status).toBe(200);
    expect(res.headers.warning).toBeUndefined();
  });

  it("an object its controller wrote with plain updates: the change may be reverted", async () => {
    await env.client.create(
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "web-config",
          namespace: "default",
          ownerReferences: [
            {
              apiVersion: "example.com/v1",
              kind: "Site",
              name: "web",
              uid: site.metadata.uid ?? "",
              controller: true,
            },
          ],
        },
        data: { color: "red" },
      },
      { fieldManager: CONTROLLER },
    );
    const r = await kubectl([
      "patch",
      "configmap",
      "web-config",
      "-p",
      '{"data":{"color":"blue"}}',
    ]);
    expect(r.code, r.err).toBe(0);
    expect(warnings(r)).toEqual([
      'ConfigMap default/web-config is managed by its controller Site/web (field manager "site-controller"); this write changed a field it manages (.data.color), which may be reverted when the controller next reconciles; to change it for good, change Site/web instead',
    ]);
    // Releasing the object (removing the controller reference) is not warned about.
    const released = await kubectl([
      "patch",
      "configmap",
      "web-config",
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/ownerReferences"}]',
    ]);
    expect(released.code, released.err).toBe(0);
    expect(warnings(released)).toEqual([]);
  });
});

describe("setpoint doctor KIND/NAME", () => {
  it("shows the managing controller, the fields it manages and the other managers' fields", async () => {
    await env.client.apply(deployment(2, "hello:1"), { fieldManager: CONTROLLER, force: true });
    const json = await runCli(["doctor", "deployment/web", "-n", "default", "-o", "json"], {
      kubeconfig: env.kubeconfigPath,
    });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as ManagedReport;
    expect(report.controller).toMatchObject({
      kind: "Site",
      name: "web",
      uid: site.metadata.uid,
      managers: [CONTROLLER],
      applies: true,
    });
    expect(report.controller?.fields).toEqual(
      expect.arrayContaining([
        ".spec.replicas",
        '.spec.template.spec.containers[name="web"].image',
        ".metadata.labels.app",
      ]),
    );
    // kubectl label (earlier) owns its label; the controller does not.
    expect(report.controller?.fields).not.toContain(".metadata.labels.team");
    expect(report.others).toContainEqual(
      expect.objectContaining({ manager: "kubectl-label", fields: [".metadata.labels.team"] }),
    );
    const text = await runCli(["doctor", "deployments.apps/web"], {
      kubeconfig: env.kubeconfigPath,
    });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      `Controlled by: Site/web (Site.example.com, uid ${site.metadata.uid})`,
    );
    expect(text.stdout).toContain(
      'Managed by field manager "site-controller" (server-side apply: set back on every pass); change these fields in Site/web, not here:\n    .metadata.annotations.example.com/site\n',
    );
    expect(text.stdout).toContain("kubectl-label (Update): .metadata.labels.team");
  });

  it("says when nothing controls an object", async () => {
    const r = await runCli(["doctor", "site/web"], { kubeconfig: env.kubeconfigPath });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Controlled by: nothing (no controller ownerReference)");
  });
});
