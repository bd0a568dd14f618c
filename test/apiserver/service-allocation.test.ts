/**
 * Services' cluster IPs and node ports through a real apiserver with small ranges:
 * the `kubernetes` Service on the first address, concurrent creates never sharing
 * an address or a port, a full range, requested values (taken, out of range,
 * changed), headless Services, kept values on update, release on delete and on a
 * type change, dry runs claiming nothing, the repair loop releasing a leak, and
 * two apiservers on one etcd sharing the ranges without a duplicate.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CLAIMS_ROOT, repairClaims } from "../../src/apiserver/store/index.ts";
import { type ControlPlane, startControlPlane } from "../../src/controlplane/index.ts";
import { request } from "../e2e/helpers/http.ts";
import { describeWithEtcd, type EtcdProcess, startEtcd } from "../helpers/etcd.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const server = startForFile(() =>
  startTestServer({
    serviceRanges: { clusterIPRange: "127.100.0.0/27", nodePortRange: "30000-30004" },
  }),
);

type Svc = {
  metadata: { name: string; resourceVersion?: string };
  spec: Record<string, unknown> & {
    clusterIP?: string;
    clusterIPs?: string[];
    ports?: { port: number; nodePort?: number; targetPort?: unknown }[];
  };
};

const base = (ns: string) => `/api/v1/namespaces/${ns}/services`;

function service(name: string, spec: Record<string, unknown> = {}): unknown {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name },
    spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec },
  };
}

async function create(name: string, spec: Record<string, unknown> = {}, query = "") {
  const res = await request(server, "POST", `${base("default")}${query}`, {
    body: service(name, spec),
  });
  return {
    code: res.code,
    svc: res.json as Svc,
    message: (res.json as { message?: string }).message,
  };
}

async function remove(name: string): Promise<void> {
  const res = await request(server, "DELETE", `${base("default")}/${name}`);
  expect(res.code).toBe(200);
}

describe("cluster IPs", () => {
  it("gives the kubernetes Service the first address, port 443 to the apiserver", async () => {
    const svc = (await request(server, "GET", `${base("default")}/kubernetes`)).json as Svc;
    expect(svc.spec.clusterIP).toBe("127.100.0.1");
    expect(svc.spec.ports).toEqual([
      { name: "https", port: 443, protocol: "TCP", targetPort: server.server.port },
    ]);
    const ep = (await request(server, "GET", "/api/v1/namespaces/default/endpoints/kubernetes"))
      .json as { subsets: unknown };
    expect(ep.subsets).toEqual([
      {
        addresses: [{ ip: "127.0.0.1" }],
        ports: [{ name: "https", port: server.server.port, protocol: "TCP" }],
      },
    ]);
    const slice = (
      await request(
        server,
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
      )
    ).json as { endpoints: unknown; metadata: { labels: Record<string, string> } };
    expect(slice.metadata.labels["kubernetes.io/service-name"]).toBe("kubernetes");
    expect(slice.endpoints).toEqual([{ addresses: ["127.0.0.1"], conditions: { ready: true } }]);
  });

  it("hands each concurrent create its own address until the range is full, then reuses a released one", async () => {
    // 30 usable addresses, the first the kubernetes Service's: 29 left.
    const names = Array.from({ length: 29 }, (_, i) => `fill-${i}`);
    const made = await Promise.all(names.map((n) => create(n)));
    expect(made.map((m) => m.code)).toEqual(names.map(() => 201));
    const ips = made.map((m) => m.svc.spec.clusterIP!);
    expect(new Set(ips).size).toBe(29);
    for (const ip of ips) expect(ip).toMatch(/^127\.100\.0\.([2-9]|[12]\d|30)$/);
    for (const m of made) {
      expect(m.svc.spec.clusterIPs).toEqual([m.svc.spec.clusterIP]);
      expect(m.svc.spec.ipFamilies).toEqual(["IPv4"]);
      expect(m.svc.spec.ipFamilyPolicy).toBe("SingleStack");
    }

    const full = await create("one-too-many");
    expect(full.code).toBe(500);
    expect(full.message).toBe(
      "Internal error occurred: failed to allocate a serviceIP: range is full",
    );

    await remove("fill-3");
    const again = await create("again");
    expect(again.code).toBe(201);
    expect(again.svc.spec.clusterIP).toBe(ips[3]);
    await Promise.all([...names.filter((n) => n !== "fill-3"), "again"].map(remove));
  });

  it("takes a requested address only when it is free and in range", async () => {
    const taken = await create("taken", { clusterIP: "127.100.0.1" });
    expect(taken.code).toBe(422);
    expect(taken.message).toBe(
      'Service "taken" is invalid: spec.clusterIPs: Invalid value: ["127.100.0.1"]: failed to allocate IP 127.100.0.1: provided IP is already allocated',
    );
    const outside = await create("outside", { clusterIP: "10.0.0.1" });
    expect(outside.code).toBe(422);
    expect(outside.message).toContain(
      "failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 127.100.0.0/27",
    );
    const mine = await create("mine", { clusterIP: "127.100.0.7" });
    expect(mine.code).toBe(201);
    expect(mine.svc.spec.clusterIPs).toEqual(["127.100.0.7"]);
    const twice = await create("twice", { clusterIP: "127.100.0.7" });
    expect(twice.code).toBe(422);
    await remove("mine");
    expect((await create("mine2", { clusterIP: "127.100.0.7" })).code).toBe(201);
    await remove("mine2");
  });

  it("keeps the address when an update leaves it out, refuses to change it", async () => {
    const made = await create("keep");
    const ip = made.svc.spec.clusterIP;
    const put = await request(server, "PUT", `${base("default")}/keep`, {
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "keep", resourceVersion: made.svc.metadata.resourceVersion },
        spec: { selector: { app: "other" }, ports: [{ port: 81 }] },
      },
    });
    expect(put.code).toBe(200);
    expect((put.json as Svc).spec.clusterIP).toBe(ip);
    const other = ip === "127.100.0.20" ? "127.100.0.21" : "127.100.0.20";
    const changed = await request(server, "PATCH", `${base("default")}/keep`, {
      headers: { "Content-Type": "application/merge-patch+json" },
      body: { spec: { clusterIP: other, clusterIPs: [other] } },
    });
    expect(changed.code).toBe(422);
    expect((changed.json as { message: string }).message).toContain(
      `spec.clusterIPs[0]: Invalid value: "${other}": may not change once set`,
    );
    await remove("keep");
  });

  it("gives a headless Service no address", async () => {
    const made = await create("headless", { clusterIP: "None" });
    expect(made.code).toBe(201);
    expect(made.svc.spec.clusterIPs).toEqual(["None"]);
    expect(made.svc.spec.ipFamilies).toEqual(["IPv4"]);
    const claims = await server.store.list(`${CLAIMS_ROOT}serviceips/`);
    expect(claims.items.map((kv) => kv.key)).toEqual([`${CLAIMS_ROOT}serviceips/127.100.0.1`]);
    await remove("headless");
  });

  it("claims nothing on a dry run", async () => {
    const dry = await create("dry", {}, "?dryRun=All");
    expect(dry.code).toBe(201);
    expect(dry.svc.spec.clusterIP).toMatch(/^127\.100\.0\./);
    const claims = await server.store.list(`${CLAIMS_ROOT}serviceips/`);
    expect(claims.items.length).toBe(1);
  });
});

describe("node ports", () => {
  it("hands out distinct ports in range until full, and releases them on delete and type change", async () => {
    const names = Array.from({ length: 5 }, (_, i) => `np-${i}`);
    const made = await Promise.all(names.map((n) => create(n, { type: "NodePort" })));
    expect(made.map((m) => m.code)).toEqual(names.map(() => 201));
    const ports = made.map((m) => m.svc.spec.ports![0]!.nodePort!);
    expect([...ports].sort()).toEqual([30000, 30001, 30002, 30003, 30004]);

    const full = await create("np-full", { type: "NodePort" });
    expect(full.code).toBe(500);
    expect(full.message).toBe(
      "Internal error occurred: failed to allocate a nodePort: range is full",
    );

    const taken = await create("np-taken", {
      type: "NodePort",
      ports: [{ port: 80, nodePort: ports[0] }],
    });
    expect(taken.code).toBe(422);
    expect(taken.message).toContain(
      `spec.ports[0].nodePort: Invalid value: ${ports[0]}: provided port is already allocated`,
    );
    const outside = await create("np-outside", {
      type: "NodePort",
      ports: [{ port: 80, nodePort: 31000 }],
    });
    expect(outside.message).toContain(
      "spec.ports[0].nodePort: Invalid value: 31000: provided port is not in the valid range. The range of valid ports is 30000-30004",
    );

    // Back to ClusterIP: the node port goes, and is free for another Service.
    const back = await request(server, "PATCH", `${base("default")}/np-0`, {
      headers: { "Content-Type": "application/merge-patch+json" },
      body: { spec: { type: "ClusterIP" } },
    });
    expect(back.code).toBe(200);
    expect((back.json as Svc).spec.ports![0]!.nodePort).toBeUndefined();
    const reuse = await create("np-reuse", {
      type: "NodePort",
      ports: [{ port: 80, nodePort: ports[0] }],
    });
    expect(reuse.code).toBe(201);

    await remove("np-1");
    const afterDelete = await create("np-after", { type: "NodePort" });
    expect(afterDelete.svc.spec.ports![0]!.nodePort).toBe(ports[1]);

    // An update that leaves the node port out keeps it.
    const patched = await request(server, "PUT", `${base("default")}/np-after`, {
      body: {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "np-after" },
        spec: { type: "NodePort", selector: { app: "x" }, ports: [{ port: 80 }] },
      },
    });
    expect((patched.json as Svc).spec.ports![0]!.nodePort).toBe(ports[1]);

    const forbidden = await create("cip-np", { ports: [{ port: 80, nodePort: 30001 }] });
    expect(forbidden.code).toBe(422);
    expect(forbidden.message).toContain(
      "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
    );
    await Promise.all(["np-0", "np-2", "np-3", "np-4", "np-reuse", "np-after"].map(remove));
  });
});

describe("repair", () => {
  it("releases a claim whose holder is gone, keeps those in use", async () => {
    const kept = await create("kept");
    const leaked = `${CLAIMS_ROOT}serviceips/127.100.0.9`;
    await server.store.create(
      leaked,
      JSON.stringify({
        holder: "/registry/core/services/default/gone",
        uid: "x",
        claimedAt: new Date(0).toISOString(),
      }),
    );
    const released = await repairClaims(server.store, server.server.registry.all(), 0);
    expect(released).toEqual(["serviceips/127.100.0.9"]);
    const left = await server.store.list(`${CLAIMS_ROOT}serviceips/`);
    expect(left.items.map((kv) => kv.key).sort()).toEqual(
      [
        `${CLAIMS_ROOT}serviceips/127.100.0.1`,
        `${CLAIMS_ROOT}serviceips/${kept.svc.spec.clusterIP}`,
      ].sort(),
    );
    await remove("kept");
  });
});

describeWithEtcd("two apiservers on one etcd", () => {
  let etcd: EtcdProcess | undefined;
  const servers: ControlPlane[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
    await etcd?.stop();
  });

  it("never hand out one address or port twice", async () => {
    etcd = await startEtcd();
    const storage = {
      backend: "etcd" as const,
      endpoints: etcd.endpoints,
      prefix: `/svc-alloc-${process.pid}/`,
    };
    const ranges = { clusterIPRange: "127.100.0.0/27", nodePortRange: "30000-30019" };
    for (let i = 0; i < 2; i++) {
      servers.push(await startControlPlane({ storage, tls: false, serviceRanges: ranges }));
    }
    // 29 addresses and 20 ports to share; each server is asked for 14 NodePort
    // Services at once (28 addresses, but only 20 ports: 8 creates must fail).
    const made = await Promise.all(
      Array.from({ length: 28 }, (_, i) =>
        request(servers[i % 2]!, "POST", base("default"), {
          body: service(`both-${i}`, { type: "NodePort" }),
        }),
      ),
    );
    const ok = made.filter((m) => m.code === 201).map((m) => m.json as Svc);
    expect(ok).toHaveLength(20);
    for (const m of made.filter((x) => x.code !== 201)) {
      expect((m.json as { message: string }).message).toMatch(
        /failed to allocate a nodePort|range is full/,
      );
    }
    const ips = ok.map((s) => s.spec.clusterIP);
    const ports = ok.map((s) => s.spec.ports![0]!.nodePort);
    expect(new Set(ips).size).toBe(20);
    expect(new Set(ports).size).toBe(20);
    // Each server sees the other's Services.
    const listed = await request(servers[1]!, "GET", base("default"));
    const names = (listed.json as { items: Svc[] }).items.map((s) => s.metadata.name);
    for (const s of ok) expect(names).toContain(s.metadata.name);
  });
});
