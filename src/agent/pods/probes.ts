/**
 * Container probes as the kubelet runs them: HTTP GET (a status from 200 to 399
 * succeeds), TCP connect, exec (exit code 0 succeeds), each within
 * timeoutSeconds (default 1). `ProbeRunner` runs one probe of one container on
 * its period (default 10 s) after its initial delay, and reports a result only
 * once failureThreshold (default 3) failures or successThreshold (default 1)
 * successes in a row are reached.
 */
import { spawn } from "node:child_process";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import type { Container, Probe } from "@setpoint/api";

export const PROBE_DEFAULTS = {
  periodSeconds: 10,
  timeoutSeconds: 1,
  failureThreshold: 3,
  successThreshold: 1,
  initialDelaySeconds: 0,
} as const;

export interface ProbeOutcome {
  ok: boolean;
  /** Why it failed, as the kubelet's Unhealthy events say it. */
  message?: string;
}

/** A named or numbered port of the container. */
function resolvePort(port: string | number | undefined, container: Container): number | undefined {
  if (typeof port === "number") return port;
  if (port === undefined) return undefined;
  if (/^\d+$/.test(port)) return Number(port);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

/** Runs a probe once. */
export function probeOnce(
  probe: Probe,
  ctx: {
    podIP: string;
    container: Container;
    env: Record<string, string>;
    cwd: string;
    /** Runs an exec probe's command in the container's namespaces (the isolated mode). */
    prefix?: string[];
  },
): Promise<ProbeOutcome> {
  const timeoutMs = (probe.timeoutSeconds ?? PROBE_DEFAULTS.timeoutSeconds) * 1000;
  if (probe.httpGet) {
    const get = probe.httpGet;
    const port = resolvePort(get.port, ctx.container);
    const host = get.host || ctx.podIP;
    const https = get.scheme === "HTTPS";
    const url = `${https ? "https" : "http"}://${host}:${port}${get.path ?? "/"}`;
    return new Promise((done) => {
      const headers: Record<string, string> = { "user-agent": "kube-probe/1.32", accept: "*/*" };
      for (const h of get.httpHeaders ?? []) headers[h.name.toLowerCase()] = h.value;
      const req = (https ? httpsRequest : httpRequest)(
        url,
        { method: "GET", headers, timeout: timeoutMs, rejectUnauthorized: false },
        (res) => {
          res.resume();
          const code = res.statusCode ?? 0;
          done(
            code >= 200 && code < 400
              ? { ok: true }
              : { ok: false, message: `HTTP probe failed with statuscode: ${code}` },
          );
        },
      );
      req.on("timeout", () => {
        req.destroy();
        done({
          ok: false,
          message: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
        });
      });
      req.on("error", (err) => done({ ok: false, message: `Get "${url}": ${err.message}` }));
      req.end();
    });
  }
  if (probe.tcpSocket) {
    const port = resolvePort(probe.tcpSocket.port, ctx.container);
    const host = probe.tcpSocket.host || ctx.podIP;
    return new Promise((done) => {
      const sock = connect({ host, port: port ?? 0, timeout: timeoutMs });
      sock.on("connect", () => {
        sock.destroy();
        done({ ok: true });
      });
      sock.on("timeout", () => {
        sock.destroy();
        done({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` });
      });
      sock.on("error", (err) =>
        done({ ok: false, message: `dial tcp ${host}:${port}: ${err.message}` }),
      );
    });
  }
  if (probe.exec) {
    const [cmd, ...args] = [...(ctx.prefix ?? []), ...(probe.exec.command ?? [])];
    return new Promise((done) => {
      let out = "";
      const child = spawn(cmd ?? "", args, {
        cwd: ctx.cwd,
        env: ctx.env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const timer = setTimeout(() => {
        try {
          process.kill(-(child.pid ?? 0), "SIGKILL");
        } catch {}
        done({ ok: false, message: `command timed out after ${timeoutMs / 1000}s` });
      }, timeoutMs);
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.on("error", (err) => {
        clearTimeout(timer);
        done({ ok: false, message: err.message });
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        done(code === 0 ? { ok: true } : { ok: false, message: out.trim() });
      });
    });
  }
  return Promise.resolve({ ok: false, message: "probe kind not supported by this agent" });
}

/**
 * One probe of one running container, run on its period until stopped; calls
 * `onResult` when the result changes (thresholds applied) and on every failure
 * that reaches the threshold (liveness acts on that).
 */
export class ProbeRunner {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  /** The result so far: undefined until a threshold was reached. */
  result: boolean | undefined;

  constructor(
    private readonly probe: Probe,
    private readonly run: () => Promise<ProbeOutcome>,
    private readonly onResult: (ok: boolean, message: string | undefined) => void,
  ) {}

  start(): void {
    const delay = (this.probe.initialDelaySeconds ?? PROBE_DEFAULTS.initialDelaySeconds) * 1000;
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const outcome = await this.run();
    if (this.stopped) return;
    if (outcome.ok) {
      this.failures = 0;
      this.successes++;
      if (
        this.result !== true &&
        this.successes >= (this.probe.successThreshold ?? PROBE_DEFAULTS.successThreshold)
      ) {
        this.result = true;
        this.onResult(true, undefined);
      }
    } else {
      this.successes = 0;
      this.failures++;
      if (this.failures >= (this.probe.failureThreshold ?? PROBE_DEFAULTS.failureThreshold)) {
        this.result = false;
        this.failures = 0;
        this.onResult(false, outcome.message);
      }
    }
    const period = (this.probe.periodSeconds ?? PROBE_DEFAULTS.periodSeconds) * 1000;
    if (!this.stopped) this.timer = setTimeout(() => void this.tick(), period);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
