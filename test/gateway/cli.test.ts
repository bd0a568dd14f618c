/**
 * `setpoint gateway` as a process: a bad command line, and SIGTERM while a
 * request is in flight (it finishes, new connections are refused, the process
 * exits 0). Runs offline from a table written to its data directory, so no
 * apiserver is needed.
 */
import { spawn } from "node:child_process";
import { connect } from "node:net";
import { afterAll, expect, it } from "vitest";
import { saveTable } from "../../src/gateway/index.ts";
import { SETPOINT_BIN } from "../e2e/helpers/setpoint.ts";
import { eventually } from "../helpers/poll.ts";
import { type Backend, get, startBackend, tempDir } from "./helpers.ts";

const data = tempDir();
let backend: Backend | undefined;
afterAll(async () => {
  await backend?.kill();
  data.remove();
});

function run(args: string[]) {
  const child = spawn(process.execPath, [SETPOINT_BIN, "gateway", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => {
    stdout += d;
  });
  child.stderr.on("data", (d) => {
    stderr += d;
  });
  const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  return { child, exited, out: () => stdout, err: () => stderr };
}

it("rejects a command line without --data-dir", async () => {
  const p = run(["--offline"]);
  expect(await p.exited).toBe(2);
  expect(p.err()).toContain("--data-dir is required");
});

it("on SIGTERM stops accepting, finishes the request in flight and exits 0", async () => {
  backend = await startBackend("drain", "127.0.70.1");
  saveTable(data.dir, {
    version: 1,
    syncedAt: new Date().toISOString(),
    routes: [
      { ingress: "ns/app", host: "", path: "/", pathType: "Prefix", backend: "ns/app:http" },
    ],
    backends: { "ns/app:http": [{ ip: backend.ip, port: backend.port }] },
    tls: [],
  });
  const p = run([
    "--offline",
    "--data-dir",
    data.dir,
    "--listen",
    "127.0.0.1:0",
    "--log-format",
    "json",
  ]);
  try {
    const addr = await eventually(
      () => /http on (\S+?)[,;]/.exec(p.out())?.[1],
      "the listen address",
      30_000,
    );
    expect(p.out()).toContain("1 routes from");
    const slow = get(addr, "app.test", "/slow");
    const b = backend;
    await eventually(() => b.hits > 0, "the request reached the backend");
    p.child.kill("SIGTERM");
    const r = await slow;
    expect(r.status).toBe(200);
    expect(r.json?.backend).toBe("drain");
    expect(await p.exited).toBe(0);
    const [host, port] = addr.split(":");
    const refused = await new Promise<string>((resolve) => {
      const s = connect(Number(port), host);
      s.on("connect", () => {
        s.destroy();
        resolve("connected");
      });
      s.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
    });
    expect(refused).toBe("ECONNREFUSED");
    expect(p.err()).toContain("gateway stopped");
  } finally {
    p.child.kill("SIGKILL");
  }
}, 60_000);
