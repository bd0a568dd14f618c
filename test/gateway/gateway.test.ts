/**
 * The gateway against a real apiserver, with real HTTP backends on 127.x
 * addresses: routing by host and path with forwarded headers and streamed
 * bodies, status.loadBalancer, TLS by SNI, retries and passive ejection when a
 * backend dies, WebSocket pass-through, updates naming missing objects that keep
 * working routes, and a restart from the table on disk with no apiserver.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import type { Ingress } from "@setpoint/api";
import { afterAll, describe, expect, it } from "vitest";
import { loadTable } from "../../src/gateway/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile } from "../helpers/test-server.ts";
import {
  type Backend,
  createService,
  get,
  ingressObject,
  putSlice,
  startBackend,
  startGateway,
  tempDir,
} from "./helpers.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));
const data = tempDir();
const gw = startForFile(() =>
  startGateway(env.config, data.dir, { tlsListen: "127.0.0.1:0", ejectMs: 60_000 }),
);
const backends: Backend[] = [];
afterAll(async () => {
  for (const b of backends) await b.kill().catch(() => {});
  data.remove();
});

let ipSeq = 10;
async function backendsFor(names: string[]): Promise<Backend[]> {
  const out: Backend[] = [];
  // One port for all of a Service's backends, each on its own address.
  const first = await startBackend(names[0], `127.0.${ipSeq}.1`);
  out.push(first);
  for (let i = 1; i < names.length; i++)
    out.push(await startBackend(names[i], `127.0.${ipSeq}.${i + 1}`, first.port));
  ipSeq++;
  backends.push(...out);
  return out;
}

/** How many tables the gateway has swapped in so far. */
async function tableUpdates(): Promise<number> {
  const text = await (await fetch(`http://${gw.adminAddress}/metrics`)).text();
  return Number(/setpoint_gateway_route_table_updates_total (\d+)/.exec(text)?.[1]);
}

const ING = { apiVersion: "networking.k8s.io/v1", kind: "Ingress" } as const;

describe("routing", () => {
  it("routes by host and path to ready endpoints, with forwarded headers and bodies, and sets status", async () => {
    const ns = await freshNamespace(env.client);
    const [web] = await backendsFor(["web"]);
    const [api1, api2, notReady] = await backendsFor(["api-1", "api-2", "api-not-ready"]);
    await createService(env.client, ns, "web", [web]);
    await createService(env.client, ns, "api", [api1, api2, notReady], {
      ready: (b) => b !== notReady,
    });
    await env.client.create(
      ingressObject(ns, "shop", [
        {
          host: "shop.test",
          paths: [
            ["/", "Prefix", "web"],
            ["/api", "Prefix", "api"],
          ],
        },
      ]),
    );
    const r = await eventually(async () => {
      const x = await get(gw.address, "shop.test:80", "/api/items?x=1");
      return x.status === 200 ? x : undefined;
    }, "route to api");
    expect(r.json?.url).toBe("/api/items?x=1");
    expect(r.json?.headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(r.json?.headers["x-forwarded-proto"]).toBe("http");
    expect(r.json?.headers["x-forwarded-host"]).toBe("shop.test:80");
    // Round-robin across ready endpoints only.
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++)
      seen.add((await get(gw.address, "shop.test", "/api")).json?.backend ?? "");
    expect([...seen].sort()).toEqual(["api-1", "api-2"]);
    expect((await get(gw.address, "shop.test", "/apis")).json?.backend).toBe("web");
    const posted = await get(gw.address, "shop.test", "/upload", {
      method: "POST",
      body: "x".repeat(100_000),
    });
    expect(posted.json?.body.length).toBe(100_000);
    expect((await get(gw.address, "nowhere.test", "/")).status).toBe(404);

    const ing = await eventually(async () => {
      const i = await env.client.get<Ingress>(ING, "shop", ns);
      return i.status?.loadBalancer?.ingress?.length ? i : undefined;
    }, "status.loadBalancer");
    expect(ing.status?.loadBalancer?.ingress?.[0]?.ip).toBe("127.0.0.1");
    expect(ing.status?.loadBalancer?.ingress?.[0]?.ports?.[0]?.port).toBe(
      Number(gw.address.split(":")[1]),
    );

    // No ready endpoint: 503.
    await putSlice(env.client, ns, "web", [web], { ready: () => false });
    await eventually(async () => (await get(gw.address, "shop.test", "/")).status === 503, "503");
  });

  it("serves Ingresses of other classes not at all, and classless ones once the class is default", async () => {
    const ns = await freshNamespace(env.client);
    const [b] = await backendsFor(["classless"]);
    await createService(env.client, ns, "svc", [b]);
    const other = ingressObject(
      ns,
      "other",
      [{ host: "other.test", paths: [["/", "Prefix", "svc"]] }],
      {
        className: "nginx",
      },
    );
    const none = ingressObject(ns, "none", [
      { host: "none.test", paths: [["/", "Prefix", "svc"]] },
    ]);
    delete none.spec?.ingressClassName;
    await env.client.create(other);
    await env.client.create(none);
    await env.client.create({
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: {
        name: "setpoint",
        annotations: { "ingressclass.kubernetes.io/is-default-class": "true" },
      },
      spec: { controller: "setpoint.dev/gateway" },
    });
    await eventually(
      async () => (await get(gw.address, "none.test", "/")).status === 200,
      "classless route",
    );
    expect((await get(gw.address, "other.test", "/")).status).toBe(404);
  });
});

describe("TLS", () => {
  it("presents each host's certificate by SNI", async () => {
    const ns = await freshNamespace(env.client);
    const [b] = await backendsFor(["secure"]);
    await createService(env.client, ns, "secure", [b]);
    const tls = tempDir();
    try {
      for (const host of ["a.tls.test", "b.tls.test"]) {
        execFileSync(
          "openssl",
          [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            `/CN=${host}`,
            "-keyout",
            join(tls.dir, `${host}.key`),
            "-out",
            join(tls.dir, `${host}.crt`),
          ],
          { stdio: "ignore" },
        );
        await env.client.create({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: host.split(".")[0], namespace: ns },
          type: "kubernetes.io/tls",
          data: {
            "tls.crt": readFileSync(join(tls.dir, `${host}.crt`)).toString("base64"),
            "tls.key": readFileSync(join(tls.dir, `${host}.key`)).toString("base64"),
          },
        });
      }
    } finally {
      tls.remove();
    }
    await env.client.create(
      ingressObject(
        ns,
        "secure",
        [
          { host: "a.tls.test", paths: [["/", "Prefix", "secure"]] },
          { host: "b.tls.test", paths: [["/", "Prefix", "secure"]] },
        ],
        {
          tls: [
            { hosts: ["a.tls.test"], secretName: "a" },
            { hosts: ["b.tls.test"], secretName: "b" },
          ],
        },
      ),
    );
    const viaTls = (servername: string) =>
      new Promise<{ cn: string; proto: string }>((resolve, reject) => {
        const [host, port] = gw.tlsAddress.split(":");
        const req = httpsRequest(
          {
            host,
            port: Number(port),
            servername,
            path: "/",
            headers: { host: servername },
            rejectUnauthorized: false,
            agent: false,
          },
          (res) => {
            let body = "";
            res.on("data", (d) => {
              body += d;
            });
            res.on("end", () => {
              const cert = (res.socket as import("node:tls").TLSSocket).getPeerCertificate();
              resolve({
                cn: String(cert.subject?.CN),
                proto: JSON.parse(body).headers["x-forwarded-proto"],
              });
            });
          },
        );
        req.on("error", reject);
        req.end();
      });
    const a = await eventually(async () => {
      const r = await viaTls("a.tls.test");
      return r.cn === "a.tls.test" ? r : undefined;
    }, "certificate of a.tls.test");
    expect(a.proto).toBe("https");
    expect((await viaTls("b.tls.test")).cn).toBe("b.tls.test");
  });
});

describe("failures", () => {
  it("retries a dead endpoint's requests on another and ejects it", async () => {
    const ns = await freshNamespace(env.client);
    const bs = await backendsFor(["r-1", "r-2", "r-3"]);
    await createService(env.client, ns, "retry", bs);
    await env.client.create(
      ingressObject(ns, "retry", [{ host: "retry.test", paths: [["/", "Prefix", "retry"]] }]),
    );
    await eventually(
      async () => (await get(gw.address, "retry.test", "/")).status === 200,
      "route",
    );
    await bs[1].kill();
    const hitsBefore = bs[0].hits + bs[2].hits;
    for (let i = 0; i < 30; i++) {
      const r = await get(gw.address, "retry.test", "/");
      expect(r.status, `request ${i}`).toBe(200);
      expect(r.json?.backend).not.toBe("r-2");
    }
    expect(bs[0].hits + bs[2].hits - hitsBefore).toBe(30);
    const metrics = await (await fetch(`http://${gw.adminAddress}/metrics`)).text();
    const ejections =
      /setpoint_gateway_endpoint_ejections_total\{backend="[^"]*retry:http"\} (\d+)/.exec(metrics);
    // Ejected once: later requests never tried it again.
    expect(Number(ejections?.[1])).toBe(1);
    // Every endpoint dead: 502.
    await bs[0].kill();
    await bs[2].kill();
    expect((await get(gw.address, "retry.test", "/")).status).toBe(502);
  });

  it("passes WebSocket upgrades through", async () => {
    const ns = await freshNamespace(env.client);
    const [b] = await backendsFor(["ws"]);
    await createService(env.client, ns, "ws", [b]);
    await env.client.create(
      ingressObject(ns, "ws", [{ host: "ws.test", paths: [["/", "Prefix", "ws"]] }]),
    );
    await eventually(async () => (await get(gw.address, "ws.test", "/")).status === 200, "route");
    const [host, port] = gw.address.split(":");
    const echoed = await new Promise<{ backend: string; text: string }>((resolve, reject) => {
      const req = request({
        host,
        port: Number(port),
        path: "/chat",
        headers: { host: "ws.test", connection: "Upgrade", upgrade: "websocket" },
      });
      req.on("upgrade", (res, socket) => {
        socket.write("hello through the gateway");
        socket.once("data", (d: Buffer) => {
          resolve({ backend: String(res.headers["x-backend"]), text: d.toString() });
          socket.destroy();
        });
      });
      req.on("error", reject);
      req.end();
    });
    expect(echoed).toEqual({ backend: "ws", text: "hello through the gateway" });
  });

  it("keeps working routes when an update names missing objects or its Service goes away", async () => {
    const ns = await freshNamespace(env.client);
    const [b] = await backendsFor(["keep"]);
    await createService(env.client, ns, "keep", [b]);
    await env.client.create(
      ingressObject(ns, "keep", [{ host: "keep.test", paths: [["/", "Prefix", "keep"]] }]),
    );
    await eventually(async () => (await get(gw.address, "keep.test", "/")).status === 200, "route");
    // A new path to a Service that does not exist, and a TLS Secret that does not exist.
    const ing = await env.client.get<Ingress>(ING, "keep", ns);
    const next = ingressObject(
      ns,
      "keep",
      [
        {
          host: "keep.test",
          paths: [
            ["/", "Prefix", "keep"],
            ["/new", "Prefix", "missing"],
          ],
        },
      ],
      { tls: [{ hosts: ["keep.test"], secretName: "missing" }] },
    );
    next.metadata.resourceVersion = ing.metadata.resourceVersion;
    await env.client.update(next);
    await eventually(
      async () => (await get(gw.address, "keep.test", "/new")).status === 503,
      "new path, no endpoints",
    );
    expect((await get(gw.address, "keep.test", "/")).json?.backend).toBe("keep");
    // The Service and its slice deleted: the last good endpoints stay.
    const updates = await tableUpdates();
    await env.client.delete({ apiVersion: "v1", kind: "Service" }, "keep", ns);
    await env.client.delete(
      { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" },
      "keep-1",
      ns,
    );
    // Both deletions were seen (an unchanged table is not swapped, so wait on the informers' view).
    await eventually(async () => {
      const svc = await env.client
        .get({ apiVersion: "v1", kind: "Service" }, "keep", ns)
        .catch(() => undefined);
      return svc === undefined;
    }, "Service gone");
    await new Promise((r) => setTimeout(r, 300));
    expect(await tableUpdates()).toBe(updates);
    for (let i = 0; i < 5; i++) expect((await get(gw.address, "keep.test", "/")).status).toBe(200);
    const saved = loadTable(data.dir);
    expect(saved?.backends[`${ns}/keep:http`]).toEqual([{ ip: b.ip, port: b.port }]);
  });
});

describe("static stability", () => {
  it("a second gateway started from the saved table with no apiserver serves at once and is ready", async () => {
    const ns = await freshNamespace(env.client);
    const [b] = await backendsFor(["disk"]);
    await createService(env.client, ns, "disk", [b]);
    await env.client.create(
      ingressObject(ns, "disk", [{ host: "disk.test", paths: [["/", "Prefix", "disk"]] }]),
    );
    await eventually(async () => (await get(gw.address, "disk.test", "/")).status === 200, "route");
    await eventually(
      () => loadTable(data.dir)?.routes.some((r) => r.host === "disk.test"),
      "saved",
    );
    const copy = tempDir();
    try {
      execFileSync("cp", [join(data.dir, "routes.json"), copy.dir]);
      const offline = await startGateway(
        { server: "http://127.0.0.1:1" }, // nothing listens there
        copy.dir,
      );
      try {
        const ready = await fetch(`http://${offline.adminAddress}/readyz`);
        expect(ready.status).toBe(200);
        const r = await get(offline.address, "disk.test", "/");
        expect(r.json?.backend).toBe("disk");
        const metrics = await (await fetch(`http://${offline.adminAddress}/metrics`)).text();
        expect(metrics).toMatch(/setpoint_gateway_route_table_age_seconds \d/);
      } finally {
        await offline.stop(1000);
      }
      const empty = tempDir();
      const fresh = await startGateway({ server: "http://127.0.0.1:1" }, empty.dir);
      try {
        expect((await fetch(`http://${fresh.adminAddress}/readyz`)).status).toBe(503);
        expect((await get(fresh.address, "disk.test", "/")).status).toBe(503);
      } finally {
        await fresh.stop(1000);
        empty.remove();
      }
    } finally {
      copy.remove();
    }
  });
});
