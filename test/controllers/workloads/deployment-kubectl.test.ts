/**
 * What kubectl users do with Deployments, with the real kubectl against a real
 * apiserver running the deployment, replicaset and garbage-collector
 * controllers: create, scale, set image, rollout status (its exact output),
 * history, undo, pause/resume, restart, and delete cascading to ReplicaSets
 * and Pods. Pods are marked ready by pods-ready.ts.
 */
import type { Deployment, ReplicaSet } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually } from "../helpers.ts";
import { type PodsReady, startPodsReady } from "./pods-ready.ts";

const env = startForFile(() =>
  startTestEnv({ controllers: ["garbage-collector", "replicaset", "deployment"] }),
);

const DEPLOY = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

/** What `kubectl create deployment web --image=nginx:1.27 --replicas=3` creates. */
const WEB_YAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
`;

/** The lines `kubectl rollout status` prints for a Deployment, as kubectl words them. */
const STATUS_LINE =
  /^(Waiting for deployment spec update to be observed\.\.\.|Waiting for deployment "web" rollout to finish: (\d+ out of \d+ new replicas have been updated|\d+ old replicas are pending termination|\d+ of \d+ updated replicas are available)\.\.\.|deployment "web" successfully rolled out)$/;

describe("kubectl with Deployments", () => {
  let k: Kubectl;
  let ns: string;
  let ready: PodsReady;

  beforeAll(async () => {
    k = new Kubectl(env.kubeconfigPath);
    ns = await freshNamespace(env.client);
    ready = startPodsReady(env.client, ns);
  });
  afterAll(async () => {
    await ready?.stop();
    await k?.close();
  });

  const kubectl = (...args: (string | { input: string })[]) => {
    const input = args.find((a): a is { input: string } => typeof a !== "string");
    const argv = args.filter((a): a is string => typeof a === "string");
    return k.ok([...argv, "-n", ns], input ? { input: input.input } : {});
  };
  const deployment = () => env.client.get<Deployment>(DEPLOY, "web", ns);
  const replicaSets = async () => (await env.client.list<ReplicaSet>(RS, { namespace: ns })).items;

  async function rolloutStatus(): Promise<string[]> {
    const out = await kubectl("rollout", "status", "deployment/web", "--timeout=60s");
    const lines = out.trimEnd().split("\n");
    for (const l of lines) expect(l).toMatch(STATUS_LINE);
    expect(lines.at(-1)).toBe('deployment "web" successfully rolled out');
    return lines;
  }

  // kubectl create sends the typed Deployment as application/vnd.kubernetes.protobuf.
  it("creates a Deployment with kubectl create deployment", async () => {
    // In a namespace of its own: the tests below count the ReplicaSets of theirs.
    const own = await freshNamespace(env.client);
    expect(
      await k.ok(["create", "deployment", "made", "--image=nginx:1.27", "--replicas=1", "-n", own]),
    ).toBe("deployment.apps/made created\n");
    const made = await env.client.get<Deployment>(DEPLOY, "made", own);
    expect(made.spec?.replicas).toBe(1);
    expect(made.spec?.selector.matchLabels).toEqual({ app: "made" });
    expect(made.spec?.template.spec?.containers).toMatchObject([
      { name: "nginx", image: "nginx:1.27", imagePullPolicy: "IfNotPresent" },
    ]);
    expect(made.spec?.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" },
    });
  });

  it("applies a Deployment and waits for its rollout", async () => {
    expect(await kubectl("apply", "-f", "-", { input: WEB_YAML })).toBe(
      "deployment.apps/web created\n",
    );
    await rolloutStatus();
    const d = await deployment();
    expect(d.status).toMatchObject({ replicas: 3, updatedReplicas: 3, availableReplicas: 3 });
    const rs = await replicaSets();
    expect(rs).toHaveLength(1);
    const get = await kubectl("get", "deployment", "web");
    expect(get.split("\n")[1]).toMatch(/^web\s+3\/3\s+3\s+3\s+/);
  });

  it("scales", async () => {
    expect(await kubectl("scale", "deployment", "web", "--replicas=5")).toBe(
      "deployment.apps/web scaled\n",
    );
    await rolloutStatus();
    expect((await deployment()).status?.availableReplicas).toBe(5);
  });

  it("sets an image, rolls out revision 2 and lists the history", async () => {
    expect(await kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")).toBe(
      "deployment.apps/web image updated\n",
    );
    await rolloutStatus();
    const d = await deployment();
    expect(d.metadata.annotations?.["deployment.kubernetes.io/revision"]).toBe("2");
    expect(await kubectl("rollout", "history", "deployment/web")).toBe(
      "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n",
    );
    const rev = await kubectl("rollout", "history", "deployment/web", "--revision=2");
    expect(rev).toContain("nginx:1.28");
  });

  it("rolls back with rollout undo", async () => {
    expect(await kubectl("rollout", "undo", "deployment/web")).toBe(
      "deployment.apps/web rolled back\n",
    );
    await rolloutStatus();
    const d = await deployment();
    expect(d.spec?.template.spec?.containers[0]?.image).toBe("nginx:1.27");
    expect(d.metadata.annotations?.["deployment.kubernetes.io/revision"]).toBe("3");
    // The first ReplicaSet is the new one again, at revision 3; still two ReplicaSets.
    const rs = await replicaSets();
    expect(rs).toHaveLength(2);
    expect(await kubectl("rollout", "history", "deployment/web")).toBe(
      "deployment.apps/web \nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n\n",
    );
  });

  it("pauses and resumes", async () => {
    expect(await kubectl("rollout", "pause", "deployment/web")).toBe(
      "deployment.apps/web paused\n",
    );
    await kubectl("set", "image", "deployment/web", "nginx=nginx:1.29");
    await eventually(async () => {
      const d = await deployment();
      return d.status?.observedGeneration === d.metadata.generation;
    }, "paused change observed");
    expect(await replicaSets()).toHaveLength(2);
    expect(await kubectl("rollout", "resume", "deployment/web")).toBe(
      "deployment.apps/web resumed\n",
    );
    await rolloutStatus();
    expect(await replicaSets()).toHaveLength(3);
  });

  it("restarts", async () => {
    expect(await kubectl("rollout", "restart", "deployment/web")).toBe(
      "deployment.apps/web restarted\n",
    );
    await rolloutStatus();
    const d = await deployment();
    expect(
      d.spec?.template.metadata?.annotations?.["kubectl.kubernetes.io/restartedAt"],
    ).toBeTruthy();
    expect(await replicaSets()).toHaveLength(4);
  });

  it("deletes the Deployment, and with it its ReplicaSets and Pods", async () => {
    expect(await kubectl("delete", "deployment", "web")).toBe('deployment.apps "web" deleted\n');
    await eventually(async () => (await replicaSets()).length === 0, "ReplicaSets collected");
    await eventually(
      async () => (await env.client.list(POD, { namespace: ns })).items.length === 0,
      "Pods collected",
    );
  });
});
