import { mkdtempSync, readFileSync, statSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  kubeconfigYaml,
  loadOrCreateTlsMaterial,
  loadOrCreateToken,
  TokenAuthenticator,
} from "../../src/apiserver/server/index.ts";

function get(url: string, ca: string, servername?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, ...(servername ? { servername } : {}) }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
  });
}

describe("TLS material", () => {
  it("is generated once, persisted, and verifies a server by its CA for localhost and 127.0.0.1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "setpoint-certs-"));
    const tls = await loadOrCreateTlsMaterial(dir, ["setpoint.example"]);
    expect(statSync(join(dir, "apiserver.key")).mode & 0o077).toBe(0);
    const again = await loadOrCreateTlsMaterial(dir);
    expect(again).toEqual(tls);

    const server = https.createServer({ cert: tls.cert, key: tls.key }, (_req, res) => {
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    try {
      expect(await get(`https://127.0.0.1:${port}/`, tls.caCert)).toBe(204);
      expect(await get(`https://localhost:${port}/`, tls.caCert)).toBe(204);
      expect(await get(`https://127.0.0.1:${port}/`, tls.caCert, "setpoint.example")).toBe(204);
      // A different CA does not verify it.
      const other = await loadOrCreateTlsMaterial(mkdtempSync(join(tmpdir(), "setpoint-certs-")));
      await expect(get(`https://127.0.0.1:${port}/`, other.caCert)).rejects.toThrow();
    } finally {
      server.close();
    }
  });
});

describe("tokens", () => {
  it("authenticates only the exact bearer token", async () => {
    const dir = mkdtempSync(join(tmpdir(), "setpoint-token-"));
    const token = await loadOrCreateToken(join(dir, "t"));
    expect(await loadOrCreateToken(join(dir, "t"))).toBe(token);
    expect(readFileSync(join(dir, "t"), "utf8").trim()).toBe(token);
    const auth = new TokenAuthenticator([[token, { name: "admin", groups: [] }]]);
    const req = (authorization?: string) =>
      ({ headers: authorization ? { authorization } : {} }) as Parameters<
        TokenAuthenticator["authenticate"]
      >[0];
    expect(auth.authenticate(req(`Bearer ${token}`))?.name).toBe("admin");
    expect(auth.authenticate(req(`bearer ${token}`))?.name).toBe("admin");
    expect(auth.authenticate(req(`Bearer ${token}x`))).toBeUndefined();
    expect(auth.authenticate(req(`Basic ${token}`))).toBeUndefined();
    expect(auth.authenticate(req())).toBeUndefined();
  });
});

describe("kubeconfig", () => {
  it("names one cluster, user and current context with inline CA data", () => {
    const cfg = parse(
      kubeconfigYaml({ server: "https://127.0.0.1:6443", caCert: "PEM", token: "tok" }),
    );
    expect(cfg["current-context"]).toBe("setpoint");
    expect(cfg.clusters[0].cluster.server).toBe("https://127.0.0.1:6443");
    expect(
      Buffer.from(cfg.clusters[0].cluster["certificate-authority-data"], "base64").toString(),
    ).toBe("PEM");
    expect(cfg.users[0].user.token).toBe("tok");
    expect(cfg.contexts[0].context).toEqual({
      cluster: "setpoint",
      user: "setpoint",
      namespace: "default",
    });
  });
});
