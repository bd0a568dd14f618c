/**
 * Transport features the Setpoint apiserver cannot exercise: it does not
 * authenticate client certificates and its tokens are fixed. A small https server
 * that requires and reports the client certificate, and switches the token it
 * accepts, stands in for a cluster's apiserver here.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { ApiError, isUnauthorized } from "../../packages/runtime/src/client/errors.ts";
import { kubeconfigYaml } from "../../packages/runtime/src/client/kubeconfig.ts";
import { issueCertificate, type KeyAndCert } from "../../src/apiserver/server/certs.ts";

async function pki(): Promise<{
  ca: string;
  server: KeyAndCert;
  client: KeyAndCert;
  otherCa: string;
}> {
  const ca = await issueCertificate({ commonName: "test-ca", ca: true });
  const [server, client, other] = await Promise.all([
    issueCertificate({ commonName: "server", issuer: ca, serverAuth: true, hosts: ["127.0.0.1"] }),
    issueCertificate({ commonName: "runtime-user", issuer: ca, clientAuth: true }),
    issueCertificate({ commonName: "other-ca", ca: true }),
  ]);
  return { ca: ca.cert, server, client, otherCa: other.cert };
}

const DISCOVERY = {
  kind: "APIResourceList",
  groupVersion: "v1",
  resources: [{ name: "configmaps", namespaced: true, kind: "ConfigMap", verbs: ["get"] }],
};

let material: Awaited<ReturnType<typeof pki>>;
let server: https.Server;
let url: string;
let tlsConnections = 0;
let acceptedToken: string | undefined;
const dir = mkdtempSync(join(tmpdir(), "client-tls-"));

beforeAll(async () => {
  material = await pki();
  server = https.createServer(
    {
      cert: material.server.cert,
      key: material.server.key,
      ca: material.ca,
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const auth = req.headers.authorization;
      if (acceptedToken !== undefined && auth !== `Bearer ${acceptedToken}`) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Failure",
            message: "Unauthorized",
            reason: "Unauthorized",
            code: 401,
          }),
        );
        return;
      }
      const sock = req.socket as TLSSocket;
      const peer = sock.getPeerCertificate();
      const body =
        req.url === "/api/v1"
          ? DISCOVERY
          : {
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: "who", namespace: "default", resourceVersion: "1" },
              data: {
                subject: sock.authorized ? String(peer.subject?.CN ?? "") : "",
                authorization: auth ?? "",
              },
            };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    },
  );
  server.on("secureConnection", () => tlsConnections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const CM = { apiVersion: "v1", kind: "ConfigMap" };

describe("client transport", () => {
  it("presents its client certificate, verifies the server with the CA, and reuses one connection", async () => {
    acceptedToken = undefined;
    const client = new Client({
      server: url,
      ca: Buffer.from(material.ca),
      cert: Buffer.from(material.client.cert),
      key: Buffer.from(material.client.key),
    });
    const before = tlsConnections;
    for (let i = 0; i < 5; i++) {
      const cm = await client.get(CM, "who", "default");
      expect((cm.data as Record<string, string>).subject).toBe("runtime-user");
    }
    expect(tlsConnections - before).toBe(1);
    expect(client.stats.byVerb).toEqual({ discovery: 1, get: 5 });
    client.close();
  });

  it("refuses a server its CA did not sign, unless told to skip verification", async () => {
    acceptedToken = undefined;
    const wrong = new Client({ server: url, ca: Buffer.from(material.otherCa) });
    const err = await wrong.get(CM, "who", "default").catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ApiError);
    expect(String((err as { code?: string }).code)).toMatch(/CERT|SIGN|VERIFY/);
    wrong.close();
    const insecure = new Client({ server: url, insecureSkipTLSVerify: true });
    const cm = await insecure.get(CM, "who", "default");
    expect((cm.data as Record<string, string>).subject).toBe("");
    insecure.close();
  });

  it("re-reads a rotated token file after a 401", async () => {
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, "first\n");
    acceptedToken = "first";
    const client = new Client({ server: url, ca: Buffer.from(material.ca), tokenFile });
    const a = await client.get(CM, "who", "default");
    expect((a.data as Record<string, string>).authorization).toBe("Bearer first");
    writeFileSync(tokenFile, "second\n");
    acceptedToken = "second";
    const b = await client.get(CM, "who", "default");
    expect((b.data as Record<string, string>).authorization).toBe("Bearer second");
    // A token nobody accepts still ends in a typed 401.
    acceptedToken = "third";
    const err = await client.get(CM, "who", "default").catch((e: unknown) => e);
    expect(isUnauthorized(err)).toBe(true);
    client.close();
  });

  it("loads all of it from a kubeconfig", async () => {
    acceptedToken = "kc-token";
    const path = join(dir, "kubeconfig");
    writeFileSync(
      path,
      kubeconfigYaml({
        server: url,
        ca: Buffer.from(material.ca),
        cert: Buffer.from(material.client.cert),
        key: Buffer.from(material.client.key),
        token: "kc-token",
      }),
    );
    const client = Client.fromKubeconfig({ path });
    const cm = await client.get(CM, "who", "default");
    expect(cm.data).toEqual({ subject: "runtime-user", authorization: "Bearer kc-token" });
    client.close();
  });
});
