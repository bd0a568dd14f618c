/**
 * The apiserver's TLS material: a self-signed CA, a serving certificate it signs,
 * and a client certificate for the admin (CN `admin`, O `system:masters`), generated
 * on first start and kept in the data dir with the CA's key (so more client
 * certificates can be signed), so kubectl verifies the server with the CA alone and
 * may present either the admin token or the certificate; and the client certificate
 * the apiserver presents to the nodes' agents (CN `kube-apiserver-kubelet-client`).
 *
 * Keys are ECDSA P-256 (generated in about a millisecond, so a first start stays
 * fast); certificates are built with @peculiar/x509 on Node's WebCrypto.
 */
import { randomBytes, webcrypto } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";

export interface TlsMaterial {
  /** PEM of the CA certificate clients trust. */
  caCert: string;
  /** PEM of the serving certificate. */
  cert: string;
  /** PEM of the serving key (PKCS#8). */
  key: string;
  /** The admin's client certificate (absent in a data dir made before there were any). */
  admin?: KeyAndCert;
  /**
   * The certificate the apiserver presents to the nodes' agents (`pods/log`): CN
   * NODE_CLIENT_USER_NAME, no groups (absent in a data dir without the CA's key).
   */
  nodeClient?: KeyAndCert;
  /**
   * PEM of the CA's key, when this process holds it: the control plane signs its
   * own parts' client certificates with it (absent in a data dir without ca.key).
   */
  caKey?: string;
}

/** A certificate and its private key, both PEM. */
export interface KeyAndCert {
  cert: string;
  key: string;
}

export interface IssueOptions {
  commonName: string;
  /** Organizations (O) of the subject: a client certificate's groups. */
  organizations?: string[];
  /** Signed by this certificate authority; self-signed when absent. */
  issuer?: KeyAndCert;
  /** A certificate authority (may sign others). */
  ca?: boolean;
  serverAuth?: boolean;
  clientAuth?: boolean;
  /** DNS names and IP addresses the certificate is valid for. */
  hosts?: string[];
  /** Default CERT_VALIDITY_DAYS. */
  validityDays?: number;
}

/** How long generated certificates are valid. */
export const CERT_VALIDITY_DAYS = 3650;

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;

type X509 = typeof import("@peculiar/x509");
let loaded: Promise<X509> | undefined;

/** Loads the certificate library on first use (most starts reuse saved material). */
function x509(): Promise<X509> {
  loaded ??= (async () => {
    await import("reflect-metadata"); // the library's dependency injection needs it
    const lib = await import("@peculiar/x509");
    lib.cryptoProvider.set(webcrypto as unknown as Parameters<X509["cryptoProvider"]["set"]>[0]);
    return lib;
  })();
  return loaded;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString("base64");
  return `-----BEGIN ${label}-----\n${b64.replace(/.{1,64}/g, "$&\n")}-----END ${label}-----\n`;
}

function derOf(pemText: string): Buffer {
  return Buffer.from(pemText.replace(/-----[^-]+-----/g, "").replace(/\s+/g, ""), "base64");
}

/** Issues a certificate with a fresh ECDSA P-256 key. */
export async function issueCertificate(opts: IssueOptions): Promise<KeyAndCert> {
  const lib = await x509();
  const subtle = webcrypto.subtle;
  const keys = (await subtle.generateKey(ALGORITHM, true, [
    "sign",
    "verify",
  ])) as webcrypto.CryptoKeyPair;

  let usages = lib.KeyUsageFlags.digitalSignature;
  if (opts.ca) usages |= lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign;
  const extensions: InstanceType<X509["Extension"]>[] = [
    new lib.BasicConstraintsExtension(Boolean(opts.ca), undefined, true),
    new lib.KeyUsagesExtension(usages, true),
    await lib.SubjectKeyIdentifierExtension.create(keys.publicKey),
  ];
  const purposes: string[] = [];
  if (opts.serverAuth) purposes.push(lib.ExtendedKeyUsage.serverAuth);
  if (opts.clientAuth) purposes.push(lib.ExtendedKeyUsage.clientAuth);
  if (purposes.length) extensions.push(new lib.ExtendedKeyUsageExtension(purposes));
  if (opts.hosts?.length) {
    const names = [...new Set(opts.hosts)].map((h) => ({
      type: isIP(h) ? ("ip" as const) : ("dns" as const),
      value: h,
    }));
    extensions.push(new lib.SubjectAlternativeNameExtension(names));
  }

  let issuerName = `CN=${opts.commonName}`;
  let signingKey = keys.privateKey;
  if (opts.issuer) {
    const issuerCert = new lib.X509Certificate(opts.issuer.cert);
    issuerName = issuerCert.subject;
    signingKey = await subtle.importKey("pkcs8", derOf(opts.issuer.key), ALGORITHM, false, [
      "sign",
    ]);
    extensions.push(await lib.AuthorityKeyIdentifierExtension.create(issuerCert.publicKey));
  }

  const now = Date.now();
  const cert = await lib.X509CertificateGenerator.create({
    // Positive serial: first hex digit below 8.
    serialNumber: `0${randomBytes(15).toString("hex")}`,
    subject: [`CN=${opts.commonName}`, ...(opts.organizations ?? []).map((o) => `O=${o}`)].join(
      ", ",
    ),
    issuer: issuerName,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + (opts.validityDays ?? CERT_VALIDITY_DAYS) * 86_400_000),
    publicKey: keys.publicKey,
    signingKey,
    signingAlgorithm: ALGORITHM,
    extensions,
  });
  return {
    cert: cert.toString("pem").replace(/\r\n/g, "\n").trimEnd().concat("\n"),
    key: pem("PRIVATE KEY", await subtle.exportKey("pkcs8", keys.privateKey)),
  };
}

/**
 * Generates a CA and a serving certificate for `hosts` (DNS names and IP
 * addresses; localhost, 127.0.0.1 and ::1 are always included).
 */
export async function generateTlsMaterial(hosts: string[] = []): Promise<TlsMaterial> {
  return (await generateWithCa(hosts)).tls;
}

/** The material of generateTlsMaterial, and the CA that signed it. */
async function generateWithCa(hosts: string[]): Promise<{ tls: TlsMaterial; ca: KeyAndCert }> {
  const ca = await issueCertificate({ commonName: "setpoint-ca", ca: true });
  const server = await issueCertificate({
    commonName: "setpoint-apiserver",
    issuer: ca,
    serverAuth: true,
    hosts: ["localhost", "127.0.0.1", "::1", ...hosts],
  });
  const admin = await issueAdmin(ca);
  const nodeClient = await issueNodeClient(ca);
  return {
    tls: { caCert: ca.cert, cert: server.cert, key: server.key, admin, nodeClient, caKey: ca.key },
    ca,
  };
}

/** The apiserver's client certificate for the nodes' agents, signed by `ca`. */
function issueNodeClient(ca: KeyAndCert): Promise<KeyAndCert> {
  return issueCertificate({ commonName: NODE_CLIENT_USER_NAME, issuer: ca, clientAuth: true });
}

/**
 * Who the apiserver is to the nodes' agents (kubeadm's name for the same
 * certificate); an agent serves logs to this identity only.
 */
export const NODE_CLIENT_USER_NAME = "kube-apiserver-kubelet-client";

/** The admin's client certificate, signed by `ca`. */
function issueAdmin(ca: KeyAndCert): Promise<KeyAndCert> {
  return issueCertificate({
    commonName: ADMIN_USER_NAME,
    organizations: [ADMIN_GROUP],
    issuer: ca,
    clientAuth: true,
  });
}

/** Who the admin's client certificate names: the admin user, in system:masters. */
export const ADMIN_USER_NAME = "admin";
export const ADMIN_GROUP = "system:masters";

/** The files loadOrCreateTlsMaterial keeps in its dir. */
export const TLS_FILES = { caCert: "ca.crt", cert: "apiserver.crt", key: "apiserver.key" } as const;
/** Kept beside them since client certificates: the CA's key and the admin's certificate. */
export const CLIENT_CERT_FILES = {
  caKey: "ca.key",
  adminCert: "admin.crt",
  adminKey: "admin.key",
  nodeClientCert: "apiserver-kubelet-client.crt",
  nodeClientKey: "apiserver-kubelet-client.key",
} as const;

/**
 * Loads the TLS material kept in `dir`, generating and saving it on first use.
 * Keys are written readable by the owner only.
 */
export async function loadOrCreateTlsMaterial(
  dir: string,
  hosts: string[] = [],
): Promise<TlsMaterial> {
  const paths = {
    caCert: join(dir, TLS_FILES.caCert),
    cert: join(dir, TLS_FILES.cert),
    key: join(dir, TLS_FILES.key),
  };
  const client = {
    caKey: join(dir, CLIENT_CERT_FILES.caKey),
    adminCert: join(dir, CLIENT_CERT_FILES.adminCert),
    adminKey: join(dir, CLIENT_CERT_FILES.adminKey),
    nodeClientCert: join(dir, CLIENT_CERT_FILES.nodeClientCert),
    nodeClientKey: join(dir, CLIENT_CERT_FILES.nodeClientKey),
  };
  if (existsSync(paths.caCert) && existsSync(paths.cert) && existsSync(paths.key)) {
    const [caCert, cert, key] = await Promise.all([
      readFile(paths.caCert, "utf8"),
      readFile(paths.cert, "utf8"),
      readFile(paths.key, "utf8"),
    ]);
    const tls: TlsMaterial = { caCert, cert, key };
    // A data dir from before client certificates: without the CA's key, none can be signed.
    const caKey = existsSync(client.caKey) ? await readFile(client.caKey, "utf8") : undefined;
    if (caKey !== undefined) tls.caKey = caKey;
    const pair = async (
      certPath: string,
      keyPath: string,
      issue: (ca: KeyAndCert) => Promise<KeyAndCert>,
    ): Promise<KeyAndCert | undefined> => {
      if (existsSync(certPath) && existsSync(keyPath)) {
        const [c, k] = await Promise.all([readFile(certPath, "utf8"), readFile(keyPath, "utf8")]);
        return { cert: c, key: k };
      }
      if (caKey === undefined) return undefined;
      const made = await issue({ cert: caCert, key: caKey });
      await writeFile(certPath, made.cert, { mode: 0o644 });
      await writeFile(keyPath, made.key, { mode: 0o600 });
      return made;
    };
    const admin = await pair(client.adminCert, client.adminKey, issueAdmin);
    if (admin) tls.admin = admin;
    const nodeClient = await pair(client.nodeClientCert, client.nodeClientKey, issueNodeClient);
    if (nodeClient) tls.nodeClient = nodeClient;
    return tls;
  }
  const { tls, ca } = await generateWithCa(hosts);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(paths.caCert, tls.caCert, { mode: 0o644 });
  await writeFile(client.caKey, ca.key, { mode: 0o600 });
  await writeFile(paths.cert, tls.cert, { mode: 0o644 });
  await writeFile(paths.key, tls.key, { mode: 0o600 });
  if (tls.admin) {
    await writeFile(client.adminCert, tls.admin.cert, { mode: 0o644 });
    await writeFile(client.adminKey, tls.admin.key, { mode: 0o600 });
  }
  if (tls.nodeClient) {
    await writeFile(client.nodeClientCert, tls.nodeClient.cert, { mode: 0o644 });
    await writeFile(client.nodeClientKey, tls.nodeClient.key, { mode: 0o600 });
  }
  return tls;
}
