/**
 * One call of a webhook: the AdmissionReview POSTed over HTTPS to its URL (or to
 * an endpoint of its Service), trusting its caBundle (the system's CAs when it
 * has none), within its timeout, with `?timeout=Ns` added to the URL as
 * Kubernetes does. Answers the parsed response or throws a CallError whose
 * message is what Kubernetes says after "failed to call webhook: ".
 */
import { request } from "node:https";

/** The longest response read from a webhook. */
export const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

export class CallError extends Error {}

export interface WebhookTarget {
  /** The URL called (with the timeout parameter). */
  url: URL;
  /** The TLS server name to verify (a Service's `name.namespace.svc`). */
  serverName?: string;
  /** PEM of the CAs to trust; undefined: the system's. */
  ca?: string;
}

/** The URL a webhook is called at: `base` with Kubernetes' `timeout` parameter. */
export function withTimeout(base: string, timeoutSeconds: number): URL {
  const url = new URL(base);
  url.searchParams.set("timeout", `${timeoutSeconds}s`);
  return url;
}

export function callWebhook(
  target: WebhookTarget,
  body: unknown,
  timeoutMs: number,
): Promise<unknown> {
  const payload = Buffer.from(JSON.stringify(body));
  const shown = `Post "${target.url.toString()}"`;
  return new Promise((resolve, reject) => {
    const req = request(
      target.url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, */*",
          "content-length": payload.length,
        },
        ...(target.ca ? { ca: target.ca } : {}),
        ...(target.serverName ? { servername: target.serverName } : {}),
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy(
              new CallError(`${shown}: response body larger than ${MAX_RESPONSE_BYTES} bytes`),
            );
            return;
          }
          chunks.push(c);
        });
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const code = res.statusCode ?? 0;
          if (code < 200 || code >= 300) {
            reject(
              new CallError(
                `an error on the server ("${text.slice(0, 1024)}") has prevented the request from succeeding`,
              ),
            );
            return;
          }
          try {
            resolve(JSON.parse(text));
          } catch (err) {
            reject(
              new CallError(`failed to decode the webhook's response: ${(err as Error).message}`),
            );
          }
        });
        res.on("error", (err) => reject(new CallError(`${shown}: ${err.message}`)));
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new CallError(`${shown}: context deadline exceeded`));
    }, timeoutMs);
    req.on("timeout", () => req.destroy(new CallError(`${shown}: context deadline exceeded`)));
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err instanceof CallError ? err : new CallError(`${shown}: ${err.message}`));
    });
    req.on("close", () => clearTimeout(timer));
    req.end(payload);
  });
}
