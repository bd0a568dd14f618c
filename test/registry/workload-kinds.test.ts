/**
 * The workload kinds through a real apiserver: every kind created and read back,
 * the defaults Kubernetes applies, status only through /status, generation only
 * where Kubernetes keeps it, a Job's generated selector, Kubernetes' graceful
 * deletion of Pods, and the scale subresource of Deployments.
 */
import type { Deployment, Job, KubeObject, Pod } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { describe, expect, it } from "vitest";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { startForFile } from "../helpers/test-server.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
const NS = "default";

function client(): Client {
  return env.client;
}

const template = {
  metadata: { labels: { app: "web" } },
  spec: {
    containers: [{ name: "web", image: "demo/hello:1.0", ports: [{ containerPort: 8080 }] }],
  },
};

function kinds(name: string): KubeObject[] {
  return [
    { apiVersion: "v1", kind: "Pod", metadata: { name, namespace: NS }, spec: template.spec },
    { apiVersion: "v1", kind: "Node", metadata: { name }, spec: {} },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: NS },
      spec: { selector: { app: "web" }, ports: [{ port: 80 }] },
    },
    { apiVersion: "v1", kind: "Endpoints", metadata: { name, namespace: NS }, subsets: [] },
    { apiVersion: "v1", kind: "PodTemplate", metadata: { name, namespace: NS }, template },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name, namespace: NS },
      spec: { selector: { matchLabels: { app: "web" } }, template },
    },
    {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { name, namespace: NS },
      spec: { selector: { matchLabels: { app: "web" } }, template },
    },
    {
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: { name, namespace: NS },
      revision: 1,
    },
    {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name, namespace: NS },
      spec: { template: { spec: { ...template.spec, restartPolicy: "Never" } } },
    },
    {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name, namespace: NS },
      addressType: "IPv4",
      endpoints: [],
    },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name, namespace: NS },
      spec: { defaultBackend: { service: { name, port: { number: 80 } } } },
    },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: { name },
      spec: { controller: "setpoint.dev/gateway" },
    },
    {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name, namespace: NS },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } },
    },
  ];
}

/** Kinds whose strategy keeps metadata.generation in Kubernetes 1.32. */
const WITH_GENERATION = new Set([
  "PodTemplate",
  "Deployment",
  "ReplicaSet",
  "Job",
  "EndpointSlice",
  "Ingress",
  "IngressClass",
  "PodDisruptionBudget",
]);

describe("workload kinds", () => {
  it("creates and reads every kind, with generation exactly where Kubernetes keeps it", async () => {
    for (const obj of kinds("k1")) {
      const created = await client().create(obj);
      const ref = { apiVersion: obj.apiVersion as string, kind: obj.kind as string };
      const got = await client().get(ref, "k1", obj.metadata.namespace);
      expect(got.metadata.uid, obj.kind).toBe(created.metadata.uid);
      expect(got.metadata.generation, obj.kind).toBe(
        WITH_GENERATION.has(obj.kind as string) ? 1 : undefined,
      );
    }
  });

  it("defaults a Pod as Kubernetes does, and starts it Pending with its QoS class", async () => {
    const pod = await client().create<Pod>({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "defaults", namespace: NS },
      spec: {
        containers: [
          { name: "a", image: "demo/hello", resources: { limits: { cpu: "1", memory: "1Gi" } } },
          {
            name: "b",
            image: "demo/hello:2.0",
            readinessProbe: { httpGet: { path: "/", port: 8080 } },
          },
        ],
      },
      status: { phase: "Running" },
    });
    const spec = pod.spec;
    expect(spec).toMatchObject({
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      securityContext: {},
      enableServiceLinks: true,
      serviceAccountName: "default",
      priority: 0,
    });
    expect(spec?.containers[0]).toMatchObject({
      imagePullPolicy: "Always",
      terminationMessagePath: "/dev/termination-log",
      terminationMessagePolicy: "File",
      resources: { requests: { cpu: "1", memory: "1Gi" } },
    });
    expect(spec?.containers[1].imagePullPolicy).toBe("IfNotPresent");
    expect(spec?.containers[1].readinessProbe).toMatchObject({
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
      httpGet: { scheme: "HTTP" },
    });
    expect(spec?.tolerations).toEqual([
      {
        key: "node.kubernetes.io/not-ready",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
      {
        key: "node.kubernetes.io/unreachable",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
    ]);
    // A client's status is dropped on create: the Pod is Pending.
    expect(pod.status).toEqual({ phase: "Pending", qosClass: "Burstable" });
  });

  it("defaults a Deployment's strategy and history, and its template's pod spec", async () => {
    const d = await client().create<Deployment>({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "defaults", namespace: NS },
      spec: { selector: { matchLabels: { app: "web" } }, template },
    });
    expect(d.spec).toMatchObject({
      replicas: 1,
      strategy: {
        type: "RollingUpdate",
        rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" },
      },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
    });
    expect(d.spec?.template.spec?.restartPolicy).toBe("Always");
    expect(d.spec?.template.spec?.containers[0].ports?.[0].protocol).toBe("TCP");
    // A Pod-only default stays out of templates.
    expect(d.spec?.template.spec?.tolerations).toBeUndefined();
  });

  it("moves a Deployment's generation on spec changes only, and its status only through /status", async () => {
    const ref = { apiVersion: "apps/v1", kind: "Deployment" };
    const d = await client().create<Deployment>({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "gen", namespace: NS },
      spec: { replicas: 2, selector: { matchLabels: { app: "web" } }, template },
    });
    const labelled = await client().patch<Deployment>(
      ref,
      "gen",
      NS,
      { metadata: { labels: { a: "b" } } },
      { type: "merge" },
    );
    expect(labelled.metadata.generation).toBe(1);
    const scaled = await client().patch<Deployment>(
      ref,
      "gen",
      NS,
      { spec: { replicas: 3 }, status: { replicas: 9 } },
      { type: "merge" },
    );
    expect(scaled.metadata.generation).toBe(2);
    expect(scaled.status?.replicas).toBeUndefined();
    const status = await client().patch<Deployment>(
      ref,
      "gen",
      NS,
      { status: { replicas: 3 } },
      { type: "merge", subresource: "status" },
    );
    expect(status.status?.replicas).toBe(3);
    expect(status.metadata.generation).toBe(2);
    expect(d.metadata.generation).toBe(1);
    const scale = await client().get(ref, "gen", NS, { subresource: "scale" });
    expect(scale).toMatchObject({
      kind: "Scale",
      spec: { replicas: 3 },
      status: { replicas: 3, selector: "app=web" },
    });
  });

  it("gives a Job Kubernetes' generated selector and pod labels", async () => {
    const job = await client().create<Job>({
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "pi", namespace: NS },
      spec: {
        template: {
          spec: { containers: [{ name: "pi", image: "demo/pi:1" }], restartPolicy: "Never" },
        },
      },
    });
    const uid = job.metadata.uid as string;
    expect(job.spec?.selector).toEqual({
      matchLabels: { "batch.kubernetes.io/controller-uid": uid },
    });
    expect(job.spec?.template.metadata?.labels).toEqual({
      "batch.kubernetes.io/controller-uid": uid,
      "batch.kubernetes.io/job-name": "pi",
      "controller-uid": uid,
      "job-name": "pi",
    });
    expect(job.spec).toMatchObject({
      parallelism: 1,
      completions: 1,
      backoffLimit: 6,
      completionMode: "NonIndexed",
      suspend: false,
    });
  });

  it("deletes a Pod bound to a node gracefully, and at once with grace 0 or when unbound", async () => {
    const ref = { apiVersion: "v1", kind: "Pod" };
    const bound = (name: string): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: NS },
      spec: {
        nodeName: "node-a",
        terminationGracePeriodSeconds: 20,
        containers: [{ name: "c", image: "demo/hello:1" }],
      },
    });
    await client().create(bound("graceful"));
    await client().delete(ref, "graceful", NS);
    const marked = await client().get<Pod>(ref, "graceful", NS);
    expect(marked.metadata.deletionTimestamp).toBeDefined();
    expect(marked.metadata.deletionGracePeriodSeconds).toBe(20);
    // A longer grace does not extend it; a shorter one shortens it.
    await client().delete(ref, "graceful", NS, { gracePeriodSeconds: 60 });
    expect((await client().get<Pod>(ref, "graceful", NS)).metadata.deletionGracePeriodSeconds).toBe(
      20,
    );
    await client().delete(ref, "graceful", NS, { gracePeriodSeconds: 5 });
    expect((await client().get<Pod>(ref, "graceful", NS)).metadata.deletionGracePeriodSeconds).toBe(
      5,
    );
    // The node's agent removes it with grace 0.
    await client().delete(ref, "graceful", NS, { gracePeriodSeconds: 0 });
    await expect(client().get(ref, "graceful", NS)).rejects.toMatchObject({ code: 404 });
    // An unbound Pod goes at once.
    await client().create({
      ...bound("unbound"),
      spec: { containers: [{ name: "c", image: "x:1" }] },
    });
    await client().delete(ref, "unbound", NS);
    await expect(client().get(ref, "unbound", NS)).rejects.toMatchObject({ code: 404 });
  });
});
