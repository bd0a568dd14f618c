/**
 * The service proxy's parts without an apiserver: the table built from
 * Services and EndpointSlices (ready endpoints only, headless and ExternalName
 * left out, node ports, previous endpoints kept when slices are missing, an
 * empty list never replacing a table), the Service environment variables as
 * the kubelet writes them, and the forwarder on real sockets (forwarding,
 * retry on another endpoint after a refused connect with the failed one
 * ejected, refusal without endpoints, listeners closed when a Service goes).
 */
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import type { EndpointSlice, Service } from "@setpoint/api";
import { afterAll, describe, expect, it } from "vitest";
import {
  buildServiceTable,
  Forwarder,
  type ServiceTable,
  serviceEnv,
} from "../../src/proxy/index.ts";

function svc(name: string, spec: Record<string, unknown>, namespace = "default"): Service {
  return { apiVersion: "v1", kind: "Service", metadata: { name, namespace }, spec } as Service;
}

function slice(
  service: string,
  ports: { name?: string; port: number }[],
  eps: [string, boolean, boolean?][],
): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${service}-x`,
      namespace: "default",
      labels: { "kubernetes.io/service-name": service },
    },
    addressType: "IPv4",
    ports,
    endpoints: eps.map(([ip, ready, terminating]) => ({
      addresses: [ip],
      conditions: { ready, serving: ready, terminating: terminating ?? false },
    })),
  } as EndpointSlice;
}

describe("the service table", () => {
  const services = [
    svc("web", {
      type: "NodePort",
      clusterIP: "127.100.0.10",
      ports: [
        { name: "http", port: 80, protocol: "TCP", nodePort: 30080 },
        { name: "dns", port: 53, protocol: "UDP", nodePort: 30053 },
      ],
    }),
    svc("db", { clusterIP: "None", ports: [{ port: 5432 }] }),
    svc("ext", { type: "ExternalName", externalName: "example.com" }),
    svc("kubernetes", {
      clusterIP: "127.100.0.1",
      ports: [{ name: "https", port: 443, protocol: "TCP" }],
    }),
  ];

  it("lists Services with a cluster IP, each port with its ready endpoints", () => {
    const { table, warnings } = buildServiceTable({
      services,
      slices: [
        slice(
          "web",
          [{ name: "http", port: 8080 }],
          [
            ["127.10.0.2", true],
            ["127.10.0.1", true],
            ["127.10.0.3", false],
            ["127.10.0.4", false, true],
          ],
        ),
      ],
    });
    expect(table.services.map((s) => s.name)).toEqual(["kubernetes", "web"]);
    const web = table.services[1]!;
    expect(web).toEqual({
      namespace: "default",
      name: "web",
      type: "NodePort",
      clusterIP: "127.100.0.10",
      ports: [
        {
          name: "http",
          port: 80,
          protocol: "TCP",
          nodePort: 30080,
          endpoints: [
            { ip: "127.10.0.1", port: 8080 },
            { ip: "127.10.0.2", port: 8080 },
          ],
        },
        { name: "dns", port: 53, protocol: "UDP", nodePort: 30053, endpoints: [] },
      ],
    });
    expect(warnings).toEqual([]);
  });

  it("keeps a Service's previous endpoints while its slices are missing, and the table on an empty list", () => {
    const previous = buildServiceTable({
      services,
      slices: [slice("web", [{ name: "http", port: 8080 }], [["127.10.0.1", true]])],
    }).table;
    const without = buildServiceTable({ services, slices: [] }, previous);
    expect(without.table.services[1]!.ports[0]!.endpoints).toEqual([
      { ip: "127.10.0.1", port: 8080 },
    ]);
    expect(without.warnings[0]).toMatch(
      /Service default\/web port 80: no EndpointSlice; keeping its 1 previous endpoints/,
    );
    // Present slices without a ready endpoint do empty it.
    const none = buildServiceTable(
      { services, slices: [slice("web", [{ name: "http", port: 8080 }], [["127.10.0.1", false]])] },
      previous,
    );
    expect(none.table.services[1]!.ports[0]!.endpoints).toEqual([]);
    // No Service at all (not even kubernetes): a wrong answer, the table stays.
    const empty = buildServiceTable({ services: [], slices: [] }, previous);
    expect(empty.table).toBe(previous);
  });
});

describe("Service environment variables", () => {
  const table: ServiceTable = {
    version: 1,
    syncedAt: "",
    services: [
      {
        namespace: "default",
        name: "kubernetes",
        type: "ClusterIP",
        clusterIP: "127.100.0.1",
        ports: [{ name: "https", port: 443, protocol: "TCP", endpoints: [] }],
      },
      {
        namespace: "shop",
        name: "redis-master",
        type: "ClusterIP",
        clusterIP: "10.0.0.11",
        ports: [{ name: "", port: 6379, protocol: "TCP", endpoints: [] }],
      },
      {
        namespace: "other",
        name: "hidden",
        type: "ClusterIP",
        clusterIP: "10.0.0.12",
        ports: [{ name: "", port: 1, protocol: "TCP", endpoints: [] }],
      },
    ],
  };

  it("names the namespace's Services and the kubernetes Service as the kubelet does", () => {
    expect(serviceEnv(table, "shop")).toEqual({
      // Kubernetes' documented example for redis-master.
      REDIS_MASTER_SERVICE_HOST: "10.0.0.11",
      REDIS_MASTER_SERVICE_PORT: "6379",
      REDIS_MASTER_PORT: "tcp://10.0.0.11:6379",
      REDIS_MASTER_PORT_6379_TCP: "tcp://10.0.0.11:6379",
      REDIS_MASTER_PORT_6379_TCP_PROTO: "tcp",
      REDIS_MASTER_PORT_6379_TCP_PORT: "6379",
      REDIS_MASTER_PORT_6379_TCP_ADDR: "10.0.0.11",
      KUBERNETES_SERVICE_HOST: "127.100.0.1",
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PORT_HTTPS: "443",
      KUBERNETES_PORT: "tcp://127.100.0.1:443",
      KUBERNETES_PORT_443_TCP: "tcp://127.100.0.1:443",
      KUBERNETES_PORT_443_TCP_PROTO: "tcp",
      KUBERNETES_PORT_443_TCP_PORT: "443",
      KUBERNETES_PORT_443_TCP_ADDR: "127.100.0.1",
    });
  });

  it("gives only the kubernetes Service's without enableServiceLinks", () => {
    expect(
      Object.keys(serviceEnv(table, "shop", false)).every((k) => k.startsWith("KUBERNETES_")),
    ).toBe(true);
  });
});

describe("the forwarder", () => {
  const servers: Server[] = [];
  const forwarder = new Forwarder({
    nodeAddress: "127.0.0.1",
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    ejectMs: 60_000,
  });
  afterAll(async () => {
    await forwarder.close();
    for (const s of servers) s.close();
  });

  async function backend(ip: string, name: string): Promise<number> {
    const s = createServer((_q, r) => r.end(name));
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, ip, () => r()));
    return (s.address() as { port: number }).port;
  }

  async function get(ip: string, port: number): Promise<string> {
    const res = await fetch(`http://${ip}:${port}/`, { signal: AbortSignal.timeout(2_000) });
    return res.text();
  }

  function refused(ip: string, port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const s = connect({ host: ip, port });
      s.once("data", () => resolve(false));
      s.once("error", () => resolve(true));
      s.once("close", () => resolve(true));
      s.write("GET / HTTP/1.0\r\n\r\n");
    });
  }

  const vip = `127.100.${200 + Math.floor(Math.random() * 50)}.${1 + Math.floor(Math.random() * 250)}`;
  const tableOf = (endpoints: { ip: string; port: number }[], name = "web"): ServiceTable => ({
    version: 1,
    syncedAt: "",
    services: [
      {
        namespace: "t",
        name,
        type: "ClusterIP",
        clusterIP: vip,
        ports: [{ name: "", port: 18080, protocol: "TCP", endpoints }],
      },
    ],
  });
  const until = async (fn: () => Promise<boolean>) => {
    for (let i = 0; i < 100 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 20));
  };

  it("forwards, retries a refused connect on another endpoint and ejects the failed one", async () => {
    const a = await backend("127.0.0.1", "a");
    // A port nothing listens on: every connect to it is refused.
    const dead = await backend("127.0.0.1", "gone");
    await new Promise<void>((r) => servers.pop()!.close(() => r()));
    forwarder.apply(
      tableOf([
        { ip: "127.0.0.1", port: dead },
        { ip: "127.0.0.1", port: a },
      ]),
    );
    await until(async () => forwarder.addresses.includes(`${vip}:18080`));
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await get(vip, 18080));
    expect(answers).toEqual(["a", "a", "a", "a", "a", "a"]);
    // One refused connect, then the dead endpoint was ejected and not tried again.
    expect(forwarder.counts.connectFailures).toBe(1);
  });

  it("refuses without endpoints, and closes the listener when the Service goes", async () => {
    forwarder.apply(tableOf([]));
    expect(await refused(vip, 18080)).toBe(true);
    forwarder.apply({ version: 1, syncedAt: "", services: [] });
    expect(forwarder.addresses).toEqual([]);
    await until(async () => {
      const ok = await new Promise<boolean>((resolve) => {
        const s = connect({ host: vip, port: 18080 });
        s.once("connect", () => {
          s.destroy();
          resolve(false);
        });
        s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ECONNREFUSED"));
      });
      return ok;
    });
    const s = connect({ host: vip, port: 18080 });
    const err = await new Promise<string>((r) =>
      s.once("error", (e: NodeJS.ErrnoException) => r(e.code ?? "")),
    );
    expect(err).toBe("ECONNREFUSED");
  });
});
