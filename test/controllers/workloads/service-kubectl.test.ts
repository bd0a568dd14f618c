/**
 * What kubectl users do with Services, with the real kubectl against a real
 * apiserver running the replicaset, deployment, endpoint, endpointslice and
 * garbage-collector controllers: `kubectl expose` of a Deployment, a
 * ReplicaSet and a Pod (the Service gets a cluster IP from the default range
 * and its selector from the exposed object), `kubectl get endpoints,
 * endpointslices` listing the Pods' IPs, and `kubectl apply --prune -l`
 * with kubectl's default prune list (which includes core/v1 Endpoints).
 * Pods are given IPs and marked ready by pods-ready.ts.
 */
import type { EndpointSlice, Endpoints, Pod, Service } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually } from "../helpers.ts";
import { type PodsReady, startPodsReady } from "./pods-ready.ts";

const env = startForFile(() =>
  startTestEnv({
    controllers: ["garbage-collector", "replicaset", "deployment", "endpoint", "endpointslice"],
  }),
);

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SVC = { apiVersion: "v1", kind: "Service" } as const;
const EP = { apiVersion: "v1", kind: "Endpoints" } as const;
const SLICE = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;

const DEPLOYMENT_YAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: demo:1
        ports:
        - {name: http, containerPort: 8080}
`;

/** 127.100.0.0/16, the default service range. */
const CLUSTER_IP = /^127\.100\.\d{1,3}\.\d{1,3}$/;

describe("kubectl with Services", () => {
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
  const podIps = async (selector: string) =>
    (await env.client.list<Pod>(POD, { namespace: ns, labelSelector: selector })).items
      .map((p) => p.status?.podIP)
      .filter((ip): ip is string => Boolean(ip))
      .sort();

  it("exposes a Deployment; its Pods show in get endpoints,endpointslices", async () => {
    await kubectl("apply", "-f", "-", { input: DEPLOYMENT_YAML });
    await kubectl("rollout", "status", "deployment/web", "--timeout=60s");
    expect(await kubectl("expose", "deployment", "web", "--port=80", "--target-port=http")).toBe(
      "service/web exposed\n",
    );
    const svc = await env.client.get<Service>(SVC, "web", ns);
    expect(svc.spec?.selector).toEqual({ app: "web" });
    expect(svc.spec?.type).toBe("ClusterIP");
    expect(svc.spec?.clusterIP).toMatch(CLUSTER_IP);
    expect(svc.spec?.ports).toEqual([{ port: 80, protocol: "TCP", targetPort: "http" }]);

    const ips = await podIps("app=web");
    expect(ips).toHaveLength(2);
    await eventually(async () => {
      const ep = await env.client.get<Endpoints>(EP, "web", ns).catch(() => undefined);
      return (ep?.subsets?.[0]?.addresses ?? []).length === 2;
    }, "both Pods in the Endpoints");
    await eventually(async () => {
      const s = await env.client.list<EndpointSlice>(SLICE, {
        namespace: ns,
        labelSelector: "kubernetes.io/service-name=web",
      });
      return (
        s.items.flatMap((x) => x.endpoints ?? []).filter((e) => e.conditions?.ready).length === 2
      );
    }, "both Pods ready in the slice");

    const get = await kubectl("get", "endpoints,endpointslices");
    const lines = get.trimEnd().split("\n");
    // Endpoints: NAME ENDPOINTS AGE, the addresses with the target port.
    expect(lines[0]).toMatch(/^NAME\s+ENDPOINTS\s+AGE$/);
    const epLine = lines.find((l) => l.startsWith("endpoints/web "));
    expect(epLine).toBeDefined();
    for (const ip of ips) expect(epLine).toContain(`${ip}:8080`);
    // EndpointSlices: NAME ADDRESSTYPE PORTS ENDPOINTS AGE.
    const sliceHeader = lines.find((l) => l.startsWith("NAME") && l.includes("ADDRESSTYPE"));
    expect(sliceHeader).toMatch(/^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE$/);
    const sliceLine = lines.find((l) => l.startsWith("endpointslice.discovery.k8s.io/web-"));
    expect(sliceLine).toMatch(/\sIPv4\s+8080\s+/);
    for (const ip of ips) expect(sliceLine).toContain(ip);

    const svcLine = (await kubectl("get", "service", "web")).split("\n")[1];
    expect(svcLine).toMatch(
      new RegExp(
        `^web\\s+ClusterIP\\s+${svc.spec!.clusterIP!.replaceAll(".", "\\.")}\\s+<none>\\s+80/TCP\\s+`,
      ),
    );
  });

  it("exposes a ReplicaSet as a NodePort Service and a Pod by name", async () => {
    const rs = (
      await env.client.list<{ metadata: { name?: string } }>(
        { apiVersion: "apps/v1", kind: "ReplicaSet" },
        { namespace: ns },
      )
    ).items[0]!.metadata.name!;
    expect(
      await kubectl("expose", "replicaset", rs, "--name=web-np", "--type=NodePort", "--port=8080"),
    ).toBe("service/web-np exposed\n");
    const np = await env.client.get<Service>(SVC, "web-np", ns);
    expect(np.spec?.type).toBe("NodePort");
    expect(np.spec?.ports?.[0]?.nodePort).toBeGreaterThanOrEqual(30000);
    expect(np.spec?.ports?.[0]?.nodePort).toBeLessThanOrEqual(32767);
    expect(np.spec?.selector).toMatchObject({ app: "web" });

    const pod = (await env.client.list<Pod>(POD, { namespace: ns, labelSelector: "app=web" }))
      .items[0]!;
    const name = pod.metadata.name!;
    expect(
      await kubectl("expose", "pod", name, "--name=one", "--port=9000", "--target-port=8080"),
    ).toBe("service/one exposed\n");
    const one = await env.client.get<Service>(SVC, "one", ns);
    expect(one.spec?.clusterIP).toMatch(CLUSTER_IP);
    expect(one.spec?.clusterIP).not.toBe(np.spec?.clusterIP);
    // A Pod's labels become the selector: pod-template-hash selects this
    // ReplicaSet's Pods, both of them.
    await eventually(async () => {
      const ep = await env.client.get<Endpoints>(EP, "one", ns).catch(() => undefined);
      return (
        ep?.subsets?.[0]?.ports?.[0]?.port === 8080 && (ep.subsets[0].addresses ?? []).length === 2
      );
    }, "the Pod's Service has endpoints");
  });

  const pruneManifest = (names: string[]) =>
    names
      .map(
        (n) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${n}
  labels: {set: pruned}
data: {k: v}
`,
      )
      .join("---\n");

  /** Applies ConfigMaps a and b, then a alone with --prune -l set=pruned and `extra` flags. */
  async function applyThenPrune(extra: string[]): Promise<void> {
    const args = ["apply", "--prune", "-l", "set=pruned", ...extra, "-f", "-", "-n", ns];
    const first = await k.run(args, { input: pruneManifest(["a", "b"]) });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe("configmap/a created\nconfigmap/b created\n");
    const second = await k.run(args, { input: pruneManifest(["a"]) });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe("configmap/a unchanged\nconfigmap/b pruned\n");
    const left = (await env.client.list(CM, { namespace: ns, labelSelector: "set=pruned" })).items;
    expect(left.map((c) => c.metadata.name)).toEqual(["a"]);
    await env.client.delete(CM, "a", ns);
  }

  it("prunes with apply --prune -l over an allowlist that names core/v1 Endpoints", async () => {
    await applyThenPrune([
      "--prune-allowlist=core/v1/ConfigMap",
      "--prune-allowlist=core/v1/Endpoints",
      "--prune-allowlist=core/v1/Service",
      "--prune-allowlist=discovery.k8s.io/v1/EndpointSlice",
    ]);
  });

  it("prunes with apply --prune -l and kubectl's default prune list", async () => {
    await applyThenPrune([]);
  });
});
