/**
 * A serving certificate for an admission webhook under test, as
 * controller-runtime's envtest makes one: a fresh CA, and a certificate it signs
 * for the given hosts, with the CA as a webhook configuration's `caBundle`.
 */
import { generateTlsMaterial } from "../apiserver/server/index.ts";

export interface WebhookCertificate {
  /** PEM of the serving certificate (for WebhookServer's `cert`). */
  cert: string;
  /** PEM of its key (WebhookServer's `key`). */
  key: string;
  /** The CA that signed it, base64 of the PEM: a clientConfig's `caBundle`. */
  caBundle: string;
}

/** A certificate for `hosts` (default 127.0.0.1 and localhost) and the CA bundle that verifies it. */
export async function webhookCertificate(
  hosts: string[] = ["127.0.0.1", "localhost"],
): Promise<WebhookCertificate> {
  const tls = await generateTlsMaterial(hosts);
  return {
    cert: tls.cert,
    key: tls.key,
    caBundle: Buffer.from(tls.caCert).toString("base64"),
  };
}
