/**
 * One autocannon run in a process of its own (so the load generator shares no event
 * loop with what it measures), printing one JSON line of results on stdout.
 *
 * Argument: a JSON object {url, host?, connections, seconds, rate?}; `rate` caps the
 * total requests per second (autocannon's overallRate), for latency at a fixed load.
 * Latencies are kept exactly (autocannon's own histogram rounds to whole ms), from
 * each response's time as autocannon measures it, for 2xx answers only.
 */
import { createRequire } from "node:module";

interface Options {
  url: string;
  host?: string;
  connections: number;
  seconds: number;
  rate?: number;
}

interface AutocannonResult {
  requests: { sent: number; total: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
}

interface Instance {
  on(
    event: "response",
    fn: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void,
  ): void;
}

type Autocannon = (
  opts: Record<string, unknown>,
  done: (err: Error | null, result: AutocannonResult) => void,
) => Instance;

const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;
const opts = JSON.parse(process.argv[2] ?? "{}") as Options;

const latencies: number[] = [];
const result = await new Promise<AutocannonResult>((resolve, reject) => {
  const inst = autocannon(
    {
      url: opts.url,
      connections: opts.connections,
      duration: opts.seconds,
      ...(opts.rate ? { overallRate: opts.rate } : {}),
      ...(opts.host ? { headers: { host: opts.host } } : {}),
    },
    (err, res) => (err ? reject(err) : resolve(res)),
  );
  inst.on("response", (_client, code, _bytes, ms) => {
    if (code >= 200 && code < 300) latencies.push(ms);
  });
});

latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  latencies.length
    ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)]
    : Number.NaN;
process.stdout.write(
  `${JSON.stringify({
    ok: latencies.length,
    sent: result.requests.sent,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    rps: latencies.length / result.duration,
    p50: pct(50),
    p99: pct(99),
  })}\n`,
);
