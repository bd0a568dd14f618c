/**
 * The endpoint and endpointslice controllers against a real apiserver: Pods
 * given IPs and readiness through /status (as a node would), Endpoints with
 * addresses and notReadyAddresses, EndpointSlices with ready/serving/terminating,
 * named target ports resolved per Pod, publishNotReadyAddresses, headless
 * Services, slices of at most N endpoints, labels and the trigger-time
 * annotation, no writes when nothing changed, and cleanup when the Service goes.
 */
import type { EndpointSlice, Endpoints, KubeObject } from "@setpoint/api";
import { Informer } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BUILTIN_CONTROLLER_NAMES,
  type ControllerManager,
} from "../../../src/controllers/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually, startControllers } from "../helpers.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SVC = { apiVersion: "v1", kind: "Service" } as const;
const EP = { apiVersion: "v1", kind: "Endpoints" } as const;
const SLICE = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;
const MAX_PER_SLICE = 3;

let manager: ControllerManager;
beforeAll(async () => {
  manager = await startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter(
      (n) => n !== "endpoint" && n !== "endpointslice" && n !== "garbage-collector",
    ),
    endpointSlice: { maxEndpointsPerSlice: MAX_PER_SLICE },
  });
});
afterAll(async () => {
  await manager?.stop();
});

interface PodSpec {
  ip: string;
  ready: boolean;
  /** containerPort of the port named "http". */
  httpPort?: number;
  labels?: Record<string, string>;
  finalizer?: boolean;
}

/** Creates a Pod and gives it an IP and readiness through /status. */
async function pod(ns: string, name: string, s: PodSpec): Promise<void> {
  await env.client.create({
    ...POD,
    metadata: {
      name,
      namespace: ns,
      labels: s.labels ?? { app: "web" },
      ...(s.finalizer ? { finalizers: ["test.setpoint.dev/hold"] } : {}),
    },
    spec: {
      nodeName: "node-1",
      containers: [
        { name: "c", image: "demo", ports: [{ name: "http", containerPort: s.httpPort ?? 8080 }] },
      ],
    },
  } as KubeObject);
  await setReady(ns, name, s.ip, s.ready);
}

async function setReady(ns: string, name: string, ip: string, ready: boolean): Promise<void> {
  const t = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await env.client.patch(
    POD,
    name,
    ns,
    {
      status: {
        phase: "Running",
        podIP: ip,
        podIPs: [{ ip }],
        conditions: [{ type: "Ready", status: ready ? "True" : "False", lastTransitionTime: t }],
      },
    },
    { type: "merge", subresource: "status" },
  );
}

async function service(ns: string, name: string, spec: Record<string, unknown>): Promise<void> {
  await env.client.create({
    ...SVC,
    metadata: { name, namespace: ns, labels: { tier: "front" } },
    spec: {
      selector: { app: "web" },
      ports: [{ name: "web", port: 80, targetPort: "http" }],
      ...spec,
    },
  } as KubeObject);
}

async function endpoints(ns: string, name: string): Promise<Endpoints | undefined> {
  try {
    return await env.client.get<Endpoints>(EP, name, ns);
  } catch {
    return undefined;
  }
}

async function slices(ns: string, svc: string): Promise<EndpointSlice[]> {
  const list = await env.client.list<EndpointSlice>(SLICE, {
    namespace: ns,
    labelSelector: `kubernetes.io/service-name=${svc}`,
  });
  return list.items;
}

const ips = (xs: { ip: string }[] | undefined) => (xs ?? []).map((a) => a.ip).sort();
const sliceEndpoints = (ss: EndpointSlice[]) =>
  ss
    .flatMap((s) =>
      (s.endpoints ?? []).map((e) => ({
        ip: e.addresses[0],
        port: s.ports?.[0]?.port,
        ...e.conditions,
      })),
    )
    .sort((a, b) => String(a.ip).localeCompare(String(b.ip)));

describe("endpoints and endpointslices", () => {
  it("lists ready and not-ready Pods, resolving named target ports per Pod", async () => {
    const ns = await freshNamespace(env.client);
    await pod(ns, "a", { ip: "10.1.0.1", ready: true });
    await pod(ns, "b", { ip: "10.1.0.2", ready: false });
    await pod(ns, "c", { ip: "10.1.0.3", ready: true, httpPort: 9090 });
    await pod(ns, "other", { ip: "10.1.0.9", ready: true, labels: { app: "other" } });
    await service(ns, "web", {});

    const ep = await eventually(async () => {
      const e = await endpoints(ns, "web");
      return e?.subsets?.length === 2 ? e : undefined;
    }, "two subsets");
    const by8080 = ep.subsets!.find((s) => s.ports?.[0]?.port === 8080)!;
    const by9090 = ep.subsets!.find((s) => s.ports?.[0]?.port === 9090)!;
    expect(ips(by8080.addresses)).toEqual(["10.1.0.1"]);
    expect(ips(by8080.notReadyAddresses)).toEqual(["10.1.0.2"]);
    expect(ips(by9090.addresses)).toEqual(["10.1.0.3"]);
    expect(by8080.ports).toEqual([{ name: "web", port: 8080, protocol: "TCP" }]);
    expect(by8080.addresses![0]!.targetRef).toMatchObject({
      kind: "Pod",
      name: "a",
      namespace: ns,
    });
    expect(by8080.addresses![0]!.nodeName).toBe("node-1");
    expect(ep.metadata.labels).toEqual({ tier: "front" });
    expect(ep.metadata.annotations?.["endpoints.kubernetes.io/last-change-trigger-time"]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );

    const ss = await eventually(async () => {
      const s = await slices(ns, "web");
      return sliceEndpoints(s).length === 3 ? s : undefined;
    }, "three endpoints in slices");
    expect(sliceEndpoints(ss)).toEqual([
      { ip: "10.1.0.1", port: 8080, ready: true, serving: true, terminating: false },
      { ip: "10.1.0.2", port: 8080, ready: false, serving: false, terminating: false },
      { ip: "10.1.0.3", port: 9090, ready: true, serving: true, terminating: false },
    ]);
    for (const s of ss) {
      expect(s.addressType).toBe("IPv4");
      expect(s.metadata.name).toMatch(/^web-/);
      expect(s.metadata.labels).toMatchObject({
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        tier: "front",
      });
      expect(s.metadata.ownerReferences?.[0]).toMatchObject({
        kind: "Service",
        name: "web",
        controller: true,
      });
    }

    // b turns ready: it moves to addresses.
    await setReady(ns, "b", "10.1.0.2", true);
    await eventually(async () => {
      const e = await endpoints(ns, "web");
      const s = e?.subsets?.find((x) => x.ports?.[0]?.port === 8080);
      return ips(s?.addresses).length === 2 && !s?.notReadyAddresses;
    }, "b ready in Endpoints");
  });

  it("shows a terminating Pod in slices only, and publishes not-ready Pods when asked", async () => {
    const ns = await freshNamespace(env.client);
    await pod(ns, "a", { ip: "10.2.0.1", ready: true, finalizer: true });
    await pod(ns, "b", { ip: "10.2.0.2", ready: false });
    await service(ns, "web", {});
    await service(ns, "all", { publishNotReadyAddresses: true });
    await eventually(async () => sliceEndpoints(await slices(ns, "web")).length === 2, "slices");

    await env.client.delete(POD, "a", ns);
    await eventually(async () => {
      const e = await endpoints(ns, "web");
      return e && ips(e.subsets?.[0]?.addresses).length === 0;
    }, "a gone from Endpoints");
    const ss = await eventually(async () => {
      const s = sliceEndpoints(await slices(ns, "web"));
      return s.find((e) => e.ip === "10.2.0.1")?.terminating ? s : undefined;
    }, "a terminating in slices");
    expect(ss.find((e) => e.ip === "10.2.0.1")).toEqual({
      ip: "10.2.0.1",
      port: 8080,
      ready: false,
      serving: true,
      terminating: true,
    });

    // Published regardless of readiness: b, and a while it terminates.
    const all = await eventually(async () => {
      const e = await endpoints(ns, "all");
      return e?.subsets?.[0]?.addresses?.length === 2 ? e : undefined;
    }, "all publishes a and b");
    expect(ips(all.subsets![0]!.addresses)).toEqual(["10.2.0.1", "10.2.0.2"]);
    expect(all.subsets![0]!.notReadyAddresses).toBeUndefined();
    await env.client.patch(POD, "a", ns, { metadata: { finalizers: null } }, { type: "merge" });
  });

  it("lists a headless Service's addresses without ports, with the headless label", async () => {
    const ns = await freshNamespace(env.client);
    await pod(ns, "a", { ip: "10.3.0.1", ready: true });
    await service(ns, "db", { clusterIP: "None", ports: [] });
    const ep = await eventually(async () => {
      const e = await endpoints(ns, "db");
      return e?.subsets?.length ? e : undefined;
    }, "headless endpoints");
    expect(ep.subsets).toEqual([
      {
        addresses: [
          {
            ip: "10.3.0.1",
            nodeName: "node-1",
            targetRef: expect.objectContaining({ kind: "Pod", name: "a" }),
          },
        ],
      },
    ]);
    expect(ep.metadata.labels?.["service.kubernetes.io/headless"]).toBe("");
    const ss = await eventually(async () => {
      const s = await slices(ns, "db");
      return s[0]?.endpoints?.length ? s : undefined;
    }, "headless slice");
    expect(ss[0]!.ports).toBeUndefined();
    expect(ss[0]!.metadata.labels?.["service.kubernetes.io/headless"]).toBe("");
  });

  it(`puts at most ${MAX_PER_SLICE} endpoints in a slice, and removes slices as Pods go`, async () => {
    const ns = await freshNamespace(env.client);
    await service(ns, "web", {});
    for (let i = 1; i <= 7; i++) await pod(ns, `p${i}`, { ip: `10.4.0.${i}`, ready: true });
    const ss = await eventually(async () => {
      const s = await slices(ns, "web");
      return sliceEndpoints(s).length === 7 ? s : undefined;
    }, "seven endpoints");
    expect(ss.length).toBe(3);
    for (const s of ss) expect(s.endpoints!.length).toBeLessThanOrEqual(MAX_PER_SLICE);
    for (let i = 1; i <= 7; i++) {
      await env.client.delete(POD, `p${i}`, ns, { gracePeriodSeconds: 0 });
    }
    // With no endpoints left, one empty slice stays.
    await eventually(async () => {
      const s = await slices(ns, "web");
      return s.length === 1 && (s[0]!.endpoints ?? []).length === 0;
    }, "one empty slice");
  });

  it("writes nothing when nothing changed, and cleans up when the Service goes", async () => {
    const ns = await freshNamespace(env.client);
    await pod(ns, "a", { ip: "10.5.0.1", ready: true });
    await service(ns, "web", {});
    await eventually(async () => (await endpoints(ns, "web"))?.subsets?.length === 1, "endpoints");
    await eventually(async () => sliceEndpoints(await slices(ns, "web")).length === 1, "slice");

    const writes: string[] = [];
    const stop = new AbortController();
    const epInformer = new Informer<Endpoints>(env.client, EP, { namespace: ns });
    const sliceInformer = new Informer<EndpointSlice>(env.client, SLICE, { namespace: ns });
    epInformer.addEventHandler({ onUpdate: () => writes.push("endpoints") });
    sliceInformer.addEventHandler({ onUpdate: () => writes.push("slice") });
    epInformer.start(stop.signal);
    sliceInformer.start(stop.signal);
    try {
      await epInformer.waitForSync();
      await sliceInformer.waitForSync();
      // A change the endpoints do not show (a label the selector ignores)...
      await env.client.patch(
        POD,
        "a",
        ns,
        { metadata: { labels: { extra: "1" } } },
        { type: "merge" },
      );
      // ...then one they do (a second Pod), reconciled after it.
      await pod(ns, "b", { ip: "10.5.0.2", ready: true });
      await eventually(
        () => ips(epInformer.list()[0]?.subsets?.[0]?.addresses).length === 2,
        "b in Endpoints",
      );
      await eventually(() => sliceEndpoints(sliceInformer.list()).length === 2, "b in the slice");
      expect(writes.filter((w) => w === "endpoints")).toEqual(["endpoints"]);
      expect(writes.filter((w) => w === "slice")).toEqual(["slice"]);
    } finally {
      stop.abort();
    }

    await env.client.delete(SVC, "web", ns);
    await eventually(async () => (await endpoints(ns, "web")) === undefined, "Endpoints deleted");
    await eventually(async () => (await slices(ns, "web")).length === 0, "slices deleted");
  });
});
