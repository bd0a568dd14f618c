/**
 * The Pod's `eviction` subresource through a real apiserver (budget status
 * written by the test, as the disruption controller would): a Pod without a
 * budget is marked DisruptionTarget and deleted; a budget allowing none
 * refuses with 429 and Kubernetes' message and cause; one allowing some takes
 * one (disruptionsAllowed, disruptedPods, condition) and two concurrent
 * evictions cannot both take the last; a status behind its spec, several
 * budgets, Pending and unready Pods, dryRun and a name mismatch are answered
 * as Kubernetes answers them; discovery names policy/v1 Eviction, and a
 * policy/v1beta1 body is read as one.
 */
import http from "node:http";
import https from "node:https";
import type { KubeObject, Pod, PodDisruptionBudget } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile } from "../helpers/test-server.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const PDB = { apiVersion: "policy/v1", kind: "PodDisruptionBudget" } as const;

function stamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

/** A Pod on a node, Running and (unless told) Ready, as its node reports it. */
async function runningPod(
  ns: string,
  name: string,
  opts: { ready?: boolean; phase?: string; labels?: Record<string, string> } = {},
): Promise<Pod> {
  const p = await env.client.create<Pod>({
    ...POD,
    metadata: { name, namespace: ns, labels: opts.labels ?? { app: "web" } },
    spec: { nodeName: "node-1", containers: [{ name: "c", image: "nginx:1.27" }] },
  });
  const t = stamp();
  return env.client.updateStatus<Pod>({
    ...p,
    status: {
      ...p.status,
      phase: opts.phase ?? "Running",
      conditions: [
        { type: "Ready", status: opts.ready === false ? "False" : "True", lastTransitionTime: t },
      ],
    },
  });
}

/** A budget whose status says what the disruption controller would. */
async function budget(
  ns: string,
  name: string,
  status: { allowed: number; current: number; desired: number },
  spec: object = {},
): Promise<PodDisruptionBudget> {
  const b = await env.client.create<PodDisruptionBudget>({
    ...PDB,
    metadata: { name, namespace: ns },
    spec: { minAvailable: status.desired, selector: { matchLabels: { app: "web" } }, ...spec },
  } as PodDisruptionBudget);
  return env.client.updateStatus<PodDisruptionBudget>({
    ...b,
    status: {
      observedGeneration: b.metadata.generation,
      disruptionsAllowed: status.allowed,
      currentHealthy: status.current,
      desiredHealthy: status.desired,
      expectedPods: status.current,
      conditions: [
        {
          type: "DisruptionAllowed",
          status: status.allowed > 0 ? "True" : "False",
          reason: status.allowed > 0 ? "SufficientPods" : "InsufficientPods",
          message: "",
          lastTransitionTime: stamp(),
        },
      ],
    },
  });
}

function evict(ns: string, name: string, extra: Record<string, unknown> = {}, query = "") {
  return env.client.raw("POST", `/api/v1/namespaces/${ns}/pods/${name}/eviction${query}`, {
    body: {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name, namespace: ns },
      ...extra,
    },
  });
}

/** A POST as any client sends it once (the runtime client would honour a Retry-After itself). */
function postOnce(
  path: string,
  body: unknown,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; json: unknown }> {
  const c = env.config;
  const url = new URL(path, c.server);
  const mod = url.protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      url,
      {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          ...(c.token ? { Authorization: `Bearer ${c.token}` } : {}),
        },
        ...(c.ca ? { ca: c.ca } : {}),
        ...(c.cert ? { cert: c.cert, key: c.key } : {}),
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json: JSON.parse(text) }),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function find(ns: string, name: string): Promise<Pod | undefined> {
  try {
    return await env.client.get<Pod>(POD, name, ns);
  } catch {
    return undefined;
  }
}

function disruptionTarget(p: Pod | undefined) {
  return p?.status?.conditions?.find((c) => c.type === "DisruptionTarget");
}

const SUCCESS = { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 };

describe("pods/eviction", () => {
  it("is in discovery as policy/v1 Eviction", async () => {
    const r = await env.client.raw("GET", "/api/v1");
    const sub = (r.json as { resources: Record<string, unknown>[] }).resources.find(
      (x) => x.name === "pods/eviction",
    );
    expect(sub).toEqual({
      name: "pods/eviction",
      singularName: "",
      namespaced: true,
      group: "policy",
      version: "v1",
      kind: "Eviction",
      verbs: ["create"],
    });
  });

  it("marks a Pod without a budget DisruptionTarget and deletes it with the Eviction's deleteOptions", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "free");
    const r = await evict(ns, "free");
    expect(r.status).toBe(201);
    expect(r.json).toEqual(SUCCESS);
    // On a node, a graceful delete: marked, its node still to stop it.
    const p = await find(ns, "free");
    expect(p?.metadata.deletionTimestamp).toBeTruthy();
    expect(p?.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(disruptionTarget(p)).toEqual({
      type: "DisruptionTarget",
      status: "True",
      reason: "EvictionByEvictionAPI",
      message: "Eviction API: evicting",
      lastTransitionTime: expect.stringMatching(/Z$/),
    });

    await runningPod(ns, "now");
    const r2 = await evict(ns, "now", { deleteOptions: { gracePeriodSeconds: 0 } });
    expect(r2.status).toBe(201);
    expect(await find(ns, "now")).toBeUndefined();

    const missing = await evict(ns, "ghost");
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ reason: "NotFound", message: 'pods "ghost" not found' });
  });

  it("refuses with 429 and the budget's cause when it allows no disruption", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "a");
    await budget(ns, "web", { allowed: 0, current: 2, desired: 2 });
    const r = await evict(ns, "a");
    expect(r.status).toBe(429);
    expect(r.headers["retry-after"]).toBeUndefined();
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      reason: "TooManyRequests",
      details: {
        causes: [
          {
            reason: "DisruptionBudget",
            message: "The disruption budget web needs 2 healthy pods and has 2 currently",
          },
        ],
      },
      code: 429,
    });
    const p = await find(ns, "a");
    expect(p?.metadata.deletionTimestamp).toBeUndefined();
    expect(disruptionTarget(p)).toBeUndefined();
  });

  it("takes one disruption from the budget, recording the Pod, and lets only one of two racing evictions have the last", async () => {
    const ns = await freshNamespace(env.client);
    for (const n of ["a", "b", "c"]) await runningPod(ns, n);
    await budget(ns, "web", { allowed: 2, current: 3, desired: 1 });
    expect((await evict(ns, "a")).status).toBe(201);
    let pdb = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    expect(pdb.status?.disruptionsAllowed).toBe(1);
    expect(Object.keys(pdb.status?.disruptedPods ?? {})).toEqual(["a"]);
    expect(pdb.status?.disruptedPods?.a).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(pdb.status?.conditions?.[0]).toMatchObject({ status: "True", reason: "SufficientPods" });

    const [rb, rc] = await Promise.all([evict(ns, "b"), evict(ns, "c")]);
    expect([rb.status, rc.status].sort()).toEqual([201, 429]);
    pdb = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    expect(pdb.status?.disruptionsAllowed).toBe(0);
    expect(Object.keys(pdb.status?.disruptedPods ?? {}).sort()).toEqual(
      rb.status === 201 ? ["a", "b"] : ["a", "c"],
    );
    expect(pdb.status?.conditions?.[0]).toMatchObject({
      type: "DisruptionAllowed",
      status: "False",
      reason: "InsufficientPods",
    });
  });

  it("refuses while the budget's status is behind its spec, asking to retry in 10 s", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "a");
    const b = await budget(ns, "web", { allowed: 1, current: 2, desired: 1 });
    await env.client.update<PodDisruptionBudget>({ ...b, spec: { ...b.spec, minAvailable: 0 } });
    const r = await postOnce(`/api/v1/namespaces/${ns}/pods/a/eviction`, {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { name: "a" },
    });
    expect(r.status).toBe(429);
    expect(r.headers["retry-after"]).toBe("10");
    expect(r.json).toMatchObject({
      reason: "TooManyRequests",
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        retryAfterSeconds: 10,
        causes: [
          {
            reason: "DisruptionBudget",
            message: "The disruption budget web is still being processed by the server.",
          },
        ],
      },
    });
  });

  it("answers 500 for a Pod two budgets select", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "a");
    await budget(ns, "one", { allowed: 1, current: 2, desired: 1 });
    await budget(ns, "two", { allowed: 1, current: 2, desired: 1 });
    const r = await evict(ns, "a");
    expect(r.status).toBe(500);
    expect(r.json).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
      code: 500,
    });
    expect((await find(ns, "a"))?.metadata.deletionTimestamp).toBeUndefined();
  });

  it("deletes Pending, finished and unready Pods a healthy budget covers without using it", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "pending", { phase: "Pending", ready: false });
    await runningPod(ns, "done", { phase: "Succeeded", ready: false });
    await runningPod(ns, "sick", { ready: false });
    await budget(ns, "web", { allowed: 0, current: 2, desired: 2 });
    for (const n of ["pending", "done", "sick"]) {
      const r = await evict(ns, n);
      expect(r.status, `${n}: ${JSON.stringify(r.json)}`).toBe(201);
    }
    // The finished Pod goes at once; the others wait for their node.
    expect(await find(ns, "done")).toBeUndefined();
    expect((await find(ns, "sick"))?.metadata.deletionTimestamp).toBeTruthy();
    const pdb = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    expect(pdb.status?.disruptionsAllowed).toBe(0);
    expect(pdb.status?.disruptedPods).toBeUndefined();
  });

  it("lets an unready Pod go under an unhealthy budget only with AlwaysAllow", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "sick", { ready: false });
    await budget(ns, "web", { allowed: 0, current: 1, desired: 2 });
    expect((await evict(ns, "sick")).status).toBe(429);
    const b = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    await env.client.delete(PDB, "web", ns);
    await budget(
      ns,
      "web2",
      { allowed: 0, current: 1, desired: 2 },
      { unhealthyPodEvictionPolicy: "AlwaysAllow" },
    );
    expect(b.metadata.name).toBe("web");
    expect((await evict(ns, "sick")).status).toBe(201);
  });

  it("changes nothing under dryRun, from the query or the deleteOptions", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "a");
    const before = await budget(ns, "web", { allowed: 1, current: 2, desired: 1 });
    expect((await evict(ns, "a", {}, "?dryRun=All")).status).toBe(201);
    expect((await evict(ns, "a", { deleteOptions: { dryRun: ["All"] } })).status).toBe(201);
    const p = await find(ns, "a");
    expect(p?.metadata.deletionTimestamp).toBeUndefined();
    expect(disruptionTarget(p)).toBeUndefined();
    const after = await env.client.get<PodDisruptionBudget>(PDB, "web", ns);
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("refuses a name that is not the URL's, and a uid precondition that is not the Pod's", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "a");
    const r = await env.client.raw("POST", `/api/v1/namespaces/${ns}/pods/a/eviction`, {
      body: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: "b" } },
    });
    expect(r.status).toBe(400);
    expect((r.json as KubeObject & { message: string }).message).toBe(
      "name in URL does not match name in Eviction object",
    );
    const u = await evict(ns, "a", { deleteOptions: { preconditions: { uid: "not-it" } } });
    expect(u.status).toBe(409);
    expect((u.json as { message: string }).message).toMatch(
      /^Operation cannot be fulfilled on Pod "a": the UID in the precondition \(not-it\) does not match the UID in record/,
    );
  });

  it("reads a policy/v1beta1 Eviction as a policy/v1 one, and refuses other versions", async () => {
    const ns = await freshNamespace(env.client);
    await runningPod(ns, "old");
    const path = `/api/v1/namespaces/${ns}/pods/old/eviction`;
    const wrong = await env.client.raw("POST", path, {
      body: { apiVersion: "policy/v2", kind: "Eviction", metadata: { name: "old" } },
    });
    expect(wrong.status).toBe(400);
    expect((wrong.json as { message: string }).message).toBe(
      "the API version in the data (policy/v2) does not match the expected API version (policy/v1)",
    );
    const r = await env.client.raw("POST", path, {
      body: {
        apiVersion: "policy/v1beta1",
        kind: "Eviction",
        metadata: { name: "old" },
        deleteOptions: { gracePeriodSeconds: 0 },
      },
    });
    expect(r.status).toBe(201);
    expect(r.json).toEqual(SUCCESS);
    expect(await find(ns, "old")).toBeUndefined();
  });
});
