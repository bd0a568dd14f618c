/**
 * Client certificates, as kube-apiserver takes them: a certificate verified against
 * the server's CA or a --client-ca-file CA authenticates its subject (CN the user,
 * each O a group); kubectl works with the admin's certificate alone; a certificate
 * from an unknown CA, or not meant for client authentication, is not accepted. The
 * data dir keeps the CA's key and the admin's certificate, and an older data dir
 * without them keeps working on its token.
 */
import { existsSync, mkdtempSync, rmSync, statSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLIENT_CERT_FILES,
  issueCertificate,
  type KeyAndCert,
  loadOrCreateTlsMaterial,
  writeKubeconfig,
} from "../../src/apiserver/server/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let srv: TestServer;
let teamCa: KeyAndCert;
const kubectls: Kubectl[] = [];
const dir = mkdtempSync(join(tmpdir(), "setpoint-client-certs-"));

beforeAll(async () => {
  teamCa = await issueCertificate({ commonName: "team-ca", ca: true });
  srv = await startTestServer({ tls: true, clientCaCerts: [teamCa.cert] });
}, 60_000);

afterAll(async () => {
  for (const k of kubectls) await k.close();
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** kubectl with only this client certificate (no token). */
async function kubectlWith(name: string, cert: KeyAndCert): Promise<Kubectl> {
  const path = join(dir, `${name}.kubeconfig`);
  await writeKubeconfig(path, { server: srv.url, caCert: srv.caCert!, clientCertificate: cert });
  const k = new Kubectl(path);
  kubectls.push(k);
  return k;
}

const whoami = async (k: Kubectl) =>
  JSON.parse(await k.ok(["auth", "whoami", "-o", "json"])).status.userInfo;

describe("client certificates", () => {
  it("authenticate the admin with the certificate the kubeconfig holds (context setpoint-cert)", async () => {
    const admin = new Kubectl(srv.kubeconfigPath);
    kubectls.push(admin);
    // The token is the current context; the certificate is the context setpoint-cert.
    const config = JSON.parse(await admin.ok(["config", "view", "--raw", "-o", "json"]));
    expect(config["current-context"]).toBe("setpoint");
    expect(Object.keys(config.users[0].user)).toEqual(["token"]);
    const viaContext = JSON.parse(
      await admin.ok(["--context", "setpoint-cert", "auth", "whoami", "-o", "json"]),
    );
    expect(viaContext.status.userInfo.username).toBe("admin");
    const user = config.users.find((u: { name: string }) => u.name === "setpoint-cert").user;
    const cert = {
      cert: Buffer.from(user["client-certificate-data"], "base64").toString(),
      key: Buffer.from(user["client-key-data"], "base64").toString(),
    };
    const certOnly = await kubectlWith("admin", cert);
    expect(await whoami(certOnly)).toEqual({
      username: "admin",
      groups: ["system:masters", "system:authenticated"],
    });
    expect(await certOnly.ok(["get", "namespace", "default", "-o", "name"])).toBe(
      "namespace/default\n",
    );
  });

  it("take CN as the user and each O as a group, from a --client-ca-file CA", async () => {
    const jane = await issueCertificate({
      commonName: "jane",
      organizations: ["devs", "team-a"],
      issuer: teamCa,
      clientAuth: true,
    });
    const k = await kubectlWith("jane", jane);
    expect(await whoami(k)).toEqual({
      username: "jane",
      groups: ["devs", "team-a", "system:authenticated"],
    });
    const denied = await k.fails(["get", "pods", "-n", "default"]);
    expect(denied.stderr).toContain(
      'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"',
    );
  });

  it("refuse a certificate from an unknown CA, or one not meant for clients", async () => {
    const strangerCa = await issueCertificate({ commonName: "stranger-ca", ca: true });
    const stranger = await issueCertificate({
      commonName: "admin",
      organizations: ["system:masters"],
      issuer: strangerCa,
      clientAuth: true,
    });
    const s = await kubectlWith("stranger", stranger);
    expect((await s.fails(["get", "namespaces"])).stderr).toContain(
      "You must be logged in to the server",
    );
    const serving = await issueCertificate({
      commonName: "admin",
      organizations: ["system:masters"],
      issuer: teamCa,
      serverAuth: true,
    });
    const v = await kubectlWith("serving", serving);
    expect((await v.fails(["get", "namespaces"])).stderr).toContain(
      "You must be logged in to the server",
    );
  });
});

describe("the data dir's certificates", () => {
  it("keeps the CA's key and the admin's certificate, owner-only, and adds them to an older dir", async () => {
    const d = join(dir, "data");
    const first = await loadOrCreateTlsMaterial(d);
    expect(first.admin).toBeDefined();
    for (const f of [CLIENT_CERT_FILES.caKey, CLIENT_CERT_FILES.adminKey]) {
      expect(statSync(join(d, f)).mode & 0o777).toBe(0o600);
    }
    // A dir from before: the admin's files gone, the CA's key kept: issued again by the same CA.
    unlinkSync(join(d, CLIENT_CERT_FILES.adminCert));
    unlinkSync(join(d, CLIENT_CERT_FILES.adminKey));
    const again = await loadOrCreateTlsMaterial(d);
    expect(again.caCert).toBe(first.caCert);
    expect(again.admin?.cert).not.toBe(first.admin?.cert);
    expect(existsSync(join(d, CLIENT_CERT_FILES.adminCert))).toBe(true);
    // Without the CA's key nothing can be signed: the same serving material, no admin certificate.
    unlinkSync(join(d, CLIENT_CERT_FILES.adminCert));
    unlinkSync(join(d, CLIENT_CERT_FILES.adminKey));
    unlinkSync(join(d, CLIENT_CERT_FILES.caKey));
    const old = await loadOrCreateTlsMaterial(d);
    expect(old.cert).toBe(first.cert);
    expect(old.admin).toBeUndefined();
  });
});
