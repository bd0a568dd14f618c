/**
 * `npm run bench:startup`: how long `setpoint up` takes, from spawning the process to
 * /readyz answering 200, on an empty data dir (first start: certificates, admin
 * token, system namespaces) and on the same data dir again (restart). Baseline, in
 * the same run: a bare Node process serving 200 over https with a ready-made
 * certificate (the floor any Node server pays). Goal: ready in under a second on an
 * empty data dir. Runs alternate so machine noise hits all three alike.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateTlsMaterial } from "../src/apiserver/server/index.ts";
import { printTable, type Row } from "./lib/table.ts";

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 7);
const root = join(import.meta.dirname, "..");

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function probe(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(
      { host: "127.0.0.1", port, path: "/readyz", rejectUnauthorized: false, timeout: 500 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
  });
}

let nextPort = 17_400 + (process.pid % 1000);

/** Spawns `args`, waits for /readyz 200 on `port`, returns the elapsed ms and stops it. */
async function timeToReady(args: string[], port: number): Promise<number> {
  const start = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, stdio: "ignore" });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${args.join(" ")} exited ${child.exitCode}`);
      if (await probe(port)) return performance.now() - start;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "bench-startup-"));
  const tls = await generateTlsMaterial();
  const bare = join(work, "bare.mjs");
  writeFileSync(
    bare,
    `import https from "node:https";
const [cert, key, port] = [process.env.CERT, process.env.KEY, Number(process.env.PORT)];
https.createServer({ cert, key }, (_q, s) => s.end("ok")).listen(port, "127.0.0.1");
process.on("SIGTERM", () => process.exit(0));`,
  );
  const first: number[] = [];
  const restart: number[] = [];
  const baseline: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const dataDir = join(work, `data-${i}`);
      const port = nextPort++;
      const up = ["bin/setpoint.mjs", "up", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`];
      first.push(await timeToReady(up, port));
      restart.push(await timeToReady(up, port));
      const barePort = nextPort++;
      process.env.CERT = tls.cert;
      process.env.KEY = tls.key;
      process.env.PORT = String(barePort);
      baseline.push(await timeToReady([bare], barePort));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const bareMs = median(baseline);
  const rows: Row[] = [
    {
      backend: "sqlite",
      metric: "ready, empty data dir (median)",
      value: median(first),
      unit: "ms",
      baseline: bareMs,
      baselineLabel: "bare https server",
      better: "lower",
      goal: { text: "< 1000 ms", met: median(first) < 1000 },
    },
    {
      backend: "sqlite",
      metric: "ready, restart (median)",
      value: median(restart),
      unit: "ms",
      baseline: bareMs,
      baselineLabel: "bare https server",
      better: "lower",
    },
  ];
  printTable(`setpoint up: spawn to /readyz 200, ${RUNS} runs each`, rows);
}

await main();
