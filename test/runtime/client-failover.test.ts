/**
 * The client's fail-over between several addresses of one API (RestConfig.servers),
 * against plain HTTP servers: a refused connection sends any request to the next
 * address, which stays in use; a connection broken after a write was sent is not
 * repeated elsewhere (its outcome is unknown), while a read is.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Client } from "@setpoint/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../helpers/etcd.ts";

interface Server {
  url: string;
  hits: string[];
  close(): Promise<void>;
}

/** A server that answers `{}` (or breaks the connection when `breakOn` says so). */
async function server(breakOn: (req: http.IncomingMessage) => boolean = () => false) {
  const hits: string[] = [];
  const sockets = new Set<Socket>();
  const srv = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    if (breakOn(req)) {
      req.socket.destroy();
      return;
    }
    res.setHeader("content-type", "application/json");
    res.end("{}");
  });
  srv.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const s: Server = {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        for (const sock of sockets) sock.destroy();
        srv.close(() => r());
      }),
  };
  running.push(s);
  return s;
}

const running: Server[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.close();
});

describe("client fail-over", () => {
  it("sends reads and writes to the next address when a connection is refused, and stays there", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const live = await server();
    const client = new Client({ server: dead, servers: [dead, live.url] });
    try {
      expect((await client.raw("GET", "/api")).status).toBe(200);
      expect(
        (await client.raw("POST", "/api/v1/namespaces/default/configmaps", { body: {} })).status,
      ).toBe(200);
      expect((await client.raw("GET", "/api")).status).toBe(200);
      expect(live.hits).toEqual([
        "GET /api",
        "POST /api/v1/namespaces/default/configmaps",
        "GET /api",
      ]);
    } finally {
      client.close();
    }
  });

  it("repeats a read elsewhere after a broken connection, never a write", async () => {
    const breaking = await server(() => true);
    const other = await server();
    const client = new Client({ server: breaking.url, servers: [breaking.url, other.url] });
    try {
      await expect(
        client.raw("POST", "/api/v1/namespaces/default/configmaps", { body: {} }),
      ).rejects.toMatchObject({ code: "ECONNRESET" });
      expect(other.hits).toEqual([]);
      // The write moved nothing: the broken server is still the one in use.
      expect((await client.raw("GET", "/api")).status).toBe(200);
      expect(breaking.hits).toEqual(["POST /api/v1/namespaces/default/configmaps", "GET /api"]);
      expect(other.hits).toEqual(["GET /api"]);
    } finally {
      client.close();
    }
  });

  it("gives the last error when no address answers", async () => {
    const client = new Client({
      server: `http://127.0.0.1:${await freePort()}`,
      servers: [`http://127.0.0.1:${await freePort()}`],
    });
    try {
      await expect(client.raw("GET", "/api")).rejects.toMatchObject({ code: "ECONNREFUSED" });
    } finally {
      client.close();
    }
  });
});
