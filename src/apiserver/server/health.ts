/**
 * /healthz, /livez and /readyz as kube-apiserver answers them: a list of named checks,
 * each also served alone (`/readyz/etcd`), `?verbose` to list them
 * (`[+]ping ok` ... `readyz check passed`), `?exclude=NAME` to leave some out. A
 * failing check makes the endpoint answer 500 with the list, the failure's reason
 * withheld (it is logged instead), as Kubernetes does.
 */
import type { ServerResponse } from "node:http";

/** One named check: resolves when healthy, throws (or rejects) with the reason when not. */
export interface HealthCheck {
  name: string;
  check: () => void | Promise<void>;
}

/** How long one check may take before it counts as failed. */
export const HEALTH_CHECK_TIMEOUT_MS = 2_000;

function withTimeout(run: () => void | Promise<void>, ms: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`check timed out after ${ms}ms`)), ms);
    timer.unref();
    Promise.resolve()
      .then(run)
      .then(
        () => {
          clearTimeout(timer);
          resolve();
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
  });
}

function sendText(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    "Cache-Control": "no-cache, private",
    "X-Content-Type-Options": "nosniff",
  });
  res.end(text);
}

/**
 * Answers `path` (`/readyz`, `/readyz/NAME`, ...) for the endpoint `endpoint` ("readyz")
 * with `checks`; returns false when the path names no check (the caller answers 404).
 */
export async function serveHealth(
  res: ServerResponse,
  endpoint: string,
  path: string,
  query: URLSearchParams,
  checks: readonly HealthCheck[],
  onFailure: (name: string, err: unknown) => void,
): Promise<boolean> {
  const sub = path.slice(endpoint.length + 2);
  if (sub !== "") {
    const one = checks.find((c) => c.name === sub);
    if (!one) return false;
    try {
      await withTimeout(one.check, HEALTH_CHECK_TIMEOUT_MS);
      sendText(res, 200, "ok");
    } catch (err) {
      onFailure(one.name, err);
      sendText(res, 500, `internal server error: ${errorText(err)}\n`);
    }
    return true;
  }
  const excluded = new Set(query.getAll("exclude"));
  const verbose = query.has("verbose");
  const run = checks.filter((c) => !excluded.has(c.name));
  const results = await Promise.all(
    run.map((c) =>
      withTimeout(c.check, HEALTH_CHECK_TIMEOUT_MS).then(
        () => true,
        (err: unknown) => {
          onFailure(c.name, err);
          return false;
        },
      ),
    ),
  );
  let lines = "";
  for (let i = 0; i < run.length; i++) {
    lines += results[i] ? `[+]${run[i].name} ok\n` : `[-]${run[i].name} failed: reason withheld\n`;
  }
  for (const name of excluded) {
    if (checks.some((c) => c.name === name)) lines += `[+]${name} excluded: ok\n`;
  }
  if (results.some((ok) => !ok)) {
    sendText(res, 500, `${lines}${endpoint} check failed\n`);
  } else if (verbose) {
    sendText(res, 200, `${lines}${endpoint} check passed\n`);
  } else {
    sendText(res, 200, "ok");
  }
  return true;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
