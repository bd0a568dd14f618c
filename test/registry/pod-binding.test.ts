/**
 * The Pod's `binding` subresource through a real apiserver: a Binding sets
 * spec.nodeName, copies its annotations and sets PodScheduled=True in one write,
 * answers 201 with a Success Status, written straight to storage as Kubernetes
 * writes it (no field ownership recorded); a second binding is 409 with Kubernetes'
 * message; a name mismatch is 400; a wrong uid is a failed precondition; the real
 * kubectl shows the node with -o wide.
 */
import type { Pod } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { startForFile } from "../helpers/test-server.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
const NS = "default";
const POD = { apiVersion: "v1", kind: "Pod" } as const;

async function createPod(name: string): Promise<Pod> {
  return env.client.create<Pod>({
    ...POD,
    metadata: { name, namespace: NS },
    spec: { containers: [{ name: "c", image: "demo/hello:1.0" }] },
  });
}

function bind(name: string, node: string, extra: Record<string, unknown> = {}) {
  return env.client.raw("POST", `/api/v1/namespaces/${NS}/pods/${name}/binding`, {
    body: {
      apiVersion: "v1",
      kind: "Binding",
      metadata: { name, ...extra },
      target: { apiVersion: "v1", kind: "Node", name: node },
    },
  });
}

describe("pods/binding", () => {
  let k: Kubectl;
  beforeAll(() => {
    k = new Kubectl(env.kubeconfigPath);
  });
  afterAll(async () => {
    await k?.close();
  });

  it("binds an unbound Pod in one write and answers a Success Status", async () => {
    const created = await createPod("bind-a");
    const r = await bind("bind-a", "node-1", { annotations: { "example.com/by": "test" } });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Success",
      code: 201,
    });
    const pod = await env.client.get<Pod>(POD, "bind-a", NS);
    expect(pod.spec?.nodeName).toBe("node-1");
    expect(pod.metadata.annotations?.["example.com/by"]).toBe("test");
    const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
    expect(scheduled?.status).toBe("True");
    expect(scheduled?.lastTransitionTime).toBeTruthy();
    expect(pod.status?.phase).toBe("Pending");
    expect(Number(pod.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
    // Written straight to storage, as Kubernetes' BindingREST writes it: the
    // binder owns no fields (a scheduled Pod's managedFields name no scheduler).
    expect(pod.metadata.managedFields).toEqual(created.metadata.managedFields);
  });

  it("refuses a Pod already bound with 409 and Kubernetes' message", async () => {
    await createPod("bind-b");
    expect((await bind("bind-b", "node-1")).status).toBe(201);
    const r = await bind("bind-b", "node-2");
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({
      status: "Failure",
      reason: "Conflict",
      message: `Operation cannot be fulfilled on pods/binding "bind-b": pod bind-b is already assigned to node "node-1"`,
      details: { name: "bind-b", kind: "pods/binding" },
      code: 409,
    });
    const pod = await env.client.get<Pod>(POD, "bind-b", NS);
    expect(pod.spec?.nodeName).toBe("node-1");
  });

  it("refuses a name mismatch, a missing target and a wrong uid", async () => {
    await createPod("bind-c");
    const mismatch = await env.client.raw("POST", `/api/v1/namespaces/${NS}/pods/bind-c/binding`, {
      body: {
        apiVersion: "v1",
        kind: "Binding",
        metadata: { name: "other" },
        target: { name: "n" },
      },
    });
    expect(mismatch.status).toBe(400);
    expect((mismatch.json as { message: string }).message).toBe(
      "name in URL does not match name in Binding object",
    );
    const noTarget = await env.client.raw("POST", `/api/v1/namespaces/${NS}/pods/bind-c/binding`, {
      body: { apiVersion: "v1", kind: "Binding", metadata: { name: "bind-c" }, target: {} },
    });
    expect(noTarget.status).toBe(422);
    const uid = await bind("bind-c", "node-1", { uid: "00000000-0000-0000-0000-000000000000" });
    expect(uid.status).toBe(409);
    expect((uid.json as { message: string }).message).toContain("Precondition failed");
    const missing = await bind("bind-none", "node-1");
    expect(missing.status).toBe(404);
    const pod = await env.client.get<Pod>(POD, "bind-c", NS);
    expect(pod.spec?.nodeName).toBeUndefined();
  });

  it("shows the node in kubectl get pods -o wide", async () => {
    await createPod("bind-d");
    expect((await bind("bind-d", "node-7")).status).toBe(201);
    const out = await k.ok(["get", "pods", "bind-d", "-n", NS, "-o", "wide"]);
    const [header, row] = out.trim().split("\n");
    const cols = header.split(/\s{2,}/);
    const cells = row.split(/\s{2,}/);
    expect(cells[cols.indexOf("NODE")]).toBe("node-7");
  });

  it("lists pods/binding in discovery", async () => {
    const r = await env.client.raw("GET", "/api/v1");
    const names = (r.json as { resources: { name: string; verbs: string[] }[] }).resources;
    expect(names.find((x) => x.name === "pods/binding")?.verbs).toEqual(["create"]);
  });
});
