/**
 * The agent's serving certificate, as the kubelet makes its own when none is
 * given: self-signed (ECDSA P-256), for the node's address and host name, kept in
 * DATA/pki/agent.crt and agent.key (owner-only) and reused by the next start.
 */
import { randomBytes, webcrypto } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";

/** How long the agent's serving certificate is valid. */
export const SERVING_CERT_VALIDITY_DAYS = 365;

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

export interface ServingCert {
  cert: string;
  key: string;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString("base64");
  return `-----BEGIN ${label}-----\n${b64.replace(/.{1,64}/g, "$&\n")}-----END ${label}-----\n`;
}

/** Loads DATA/pki/agent.{crt,key}, making them on first use for `hosts`. */
export async function loadOrCreateServingCert(
  dataDir: string,
  nodeName: string,
  hosts: string[],
): Promise<ServingCert> {
  const dir = join(dataDir, "pki");
  const certPath = join(dir, "agent.crt");
  const keyPath = join(dir, "agent.key");
  if (existsSync(certPath) && existsSync(keyPath)) {
    return { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") };
  }
  await import("reflect-metadata"); // the certificate library's dependency injection needs it
  const x509 = await import("@peculiar/x509");
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const names = [...new Set(hosts)].map((h) => ({
    type: isIP(h) ? ("ip" as const) : ("dns" as const),
    value: h,
  }));
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: `0${randomBytes(15).toString("hex")}`,
    name: `CN=${nodeName}@${Math.floor(now / 1000)}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + SERVING_CERT_VALIDITY_DAYS * 86_400_000),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  const out = {
    cert: cert.toString("pem").replace(/\r\n/g, "\n").trimEnd().concat("\n"),
    key: pem("PRIVATE KEY", await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)),
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(certPath, out.cert, { mode: 0o644 });
  writeFileSync(keyPath, out.key, { mode: 0o600 });
  return out;
}
