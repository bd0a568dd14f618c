/**
 * The apiserver's TLS material: a self-signed CA and a serving certificate it
 * signs, generated on first start and kept in the data dir, so kubectl (which only
 * sends bearer tokens over https) can verify the server with the CA alone.
 */
import { generateKeyPair, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import forge from "node-forge";

export interface TlsMaterial {
  /** PEM of the CA certificate clients trust. */
  caCert: string;
  /** PEM of the serving certificate. */
  cert: string;
  /** PEM of the serving key. */
  key: string;
}

/** How long generated certificates are valid. */
export const CERT_VALIDITY_DAYS = 3650;
/** RSA modulus length of generated keys. */
export const KEY_BITS = 2048;

const generateKeyPairAsync = promisify(generateKeyPair);

async function rsaKeyPair(): Promise<{ publicKey: string; privateKey: string }> {
  return generateKeyPairAsync("rsa", {
    modulusLength: KEY_BITS,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
}

function newCertificate(publicKeyPem: string, commonName: string): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  // Positive serial: first hex digit below 8.
  cert.serialNumber = `0${randomBytes(15).toString("hex")}`;
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + CERT_VALIDITY_DAYS * 86_400_000);
  cert.setSubject([{ name: "commonName", value: commonName }]);
  return cert;
}

/**
 * Generates a CA and a serving certificate for `hosts` (DNS names and IP
 * addresses; localhost and 127.0.0.1 are always included).
 */
export async function generateTlsMaterial(hosts: string[] = []): Promise<TlsMaterial> {
  // Both keys at once: key generation runs on the thread pool.
  const [caKeys, serverKeys] = await Promise.all([rsaKeyPair(), rsaKeyPair()]);
  const caKey = forge.pki.privateKeyFromPem(caKeys.privateKey);

  const ca = newCertificate(caKeys.publicKey, "setpoint-ca");
  ca.setIssuer(ca.subject.attributes);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  ca.sign(caKey, forge.md.sha256.create());

  const names = [...new Set(["localhost", "127.0.0.1", "::1", ...hosts])];
  const altNames = names.map((n) => (isIP(n) ? { type: 7, ip: n } : { type: 2, value: n }));
  const server = newCertificate(serverKeys.publicKey, "setpoint-apiserver");
  server.setIssuer(ca.subject.attributes);
  server.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames },
    { name: "authorityKeyIdentifier", keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
  ]);
  server.sign(caKey, forge.md.sha256.create());

  return {
    caCert: forge.pki.certificateToPem(ca),
    cert: forge.pki.certificateToPem(server),
    key: serverKeys.privateKey,
  };
}

const FILES = { caCert: "ca.crt", cert: "apiserver.crt", key: "apiserver.key" } as const;

/**
 * Loads the TLS material kept in `dir`, generating and saving it on first use.
 * Keys are written readable by the owner only.
 */
export async function loadOrCreateTlsMaterial(
  dir: string,
  hosts: string[] = [],
): Promise<TlsMaterial> {
  const paths = {
    caCert: join(dir, FILES.caCert),
    cert: join(dir, FILES.cert),
    key: join(dir, FILES.key),
  };
  if (existsSync(paths.caCert) && existsSync(paths.cert) && existsSync(paths.key)) {
    const [caCert, cert, key] = await Promise.all([
      readFile(paths.caCert, "utf8"),
      readFile(paths.cert, "utf8"),
      readFile(paths.key, "utf8"),
    ]);
    return { caCert, cert, key };
  }
  const tls = await generateTlsMaterial(hosts);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(paths.caCert, tls.caCert, { mode: 0o644 });
  await writeFile(paths.cert, tls.cert, { mode: 0o644 });
  await writeFile(paths.key, tls.key, { mode: 0o600 });
  return tls;
}
