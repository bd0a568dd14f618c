/**
 * `setpoint up` when a start cannot succeed, and how it logs when it does: real
 * processes (`node bin/setpoint.mjs up`) on temporary data dirs. A failure a person
 * can fix (the address is in use, the data dir is held by another process, etcd
 * does not answer, the store file is not one) is one line naming what to change,
 * exit 1, no stack trace, and a failed first start leaves no data dir behind; a
 * failed restart leaves the data dir as it was. Logs are readable lines with --log-format text and JSON otherwise; with
 * stdout and stderr in one file, that file is JSON lines only.
 */
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { until } from "./helpers/http.ts";
import {
  type Exit,
  runSetpoint,
  SETPOINT_BIN,
  type SetpointProcess,
  startSetpoint,
} from "./helpers/setpoint.ts";

/** Per-test timeout: process starts include compiling the sources on a loaded machine. */
const TEST_TIMEOUT_MS = 90_000;
/** Longest wait for a failing `setpoint up` to exit (etcd's dial timeout is 5 s). */
const FAIL_TIMEOUT_MS = 60_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function started(args: string[]): Promise<SetpointProcess> {
  const p = await startSetpoint(args);
  cleanups.push(() => p.stop("SIGKILL"));
  return p;
}

/** A port on 127.0.0.1 held by a listening server of this test (closed after the file). */
async function heldPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return (server.address() as net.AddressInfo).port;
}

/** A port on 127.0.0.1 nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A failed start: exit 1, exactly one line on stderr matching `line`, nothing served. */
function expectOneLine(r: Exit, line: RegExp): void {
  expect([r.code, r.signal], r.stderr).toEqual([1, null]);
  const lines = r.stderr.split("\n").filter(Boolean);
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^setpoint up: /);
  expect(lines[0]).toMatch(line);
  expect(r.stdout).toBe("");
}

describe("setpoint up: a start that cannot succeed", () => {
  it(
    "names the address and --listen when the port is in use, and leaves no data dir",
    async () => {
      const port = await heldPort();
      const dataDir = join(tempDir("setpoint-start-port-"), "data");
      const r = await runSetpoint(
        ["up", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`],
        FAIL_TIMEOUT_MS,
      );
      expectOneLine(r, new RegExp(`127\\.0\\.0\\.1:${port} is already in use.*--listen HOST:PORT`));
      // It got as far as certificates and the SQLite file before the listen failed:
      // all of it, and the data dir it made, are gone.
      expect(existsSync(dataDir)).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "names the pid holding the data dir, and leaves that data dir as it was",
    async () => {
      const dataDir = tempDir("setpoint-start-held-");
      const owner = await started(["--data-dir", dataDir]);
      const before = readdirSync(dataDir).sort();
      const kubeconfig = readFileSync(owner.kubeconfig, "utf8");
      const r = await runSetpoint(
        ["up", "--data-dir", dataDir, "--listen", "127.0.0.1:0"],
        FAIL_TIMEOUT_MS,
      );
      expectOneLine(
        r,
        new RegExp(
          `the data dir ${dataDir} is in use: the store is open in process ${owner.child.pid}\\b.*--data-dir`,
        ),
      );
      expect(readdirSync(dataDir).sort()).toEqual(before);
      expect(readFileSync(owner.kubeconfig, "utf8")).toBe(kubeconfig);
      expect(owner.child.exitCode).toBe(null);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "keeps a data dir that had started before when a restart fails",
    async () => {
      const dataDir = tempDir("setpoint-start-restart-");
      const first = await started(["--data-dir", dataDir]);
      const exit = await first.stop("SIGTERM");
      expect(exit.code, exit.stderr).toBe(0);
      const before = readdirSync(dataDir).sort();
      expect(before).toEqual(expect.arrayContaining(["ca.crt", "kubeconfig", "state.db"]));
      const port = await heldPort();
      const r = await runSetpoint(
        ["up", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`],
        FAIL_TIMEOUT_MS,
      );
      expectOneLine(r, /is already in use/);
      expect(readdirSync(dataDir).sort()).toEqual(before);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "refuses a data dir whose state.db is not a store, touching nothing in it",
    async () => {
      const dataDir = tempDir("setpoint-start-foreign-");
      writeFileSync(join(dataDir, "state.db"), "not a database, but someone's file\n");
      const r = await runSetpoint(
        ["up", "--data-dir", dataDir, "--listen", "127.0.0.1:0"],
        FAIL_TIMEOUT_MS,
      );
      expectOneLine(
        r,
        new RegExp(`cannot open store ${dataDir}/state\\.db: .*not a SQLite database.*--data-dir`),
      );
      expect(readdirSync(dataDir)).toEqual(["state.db"]);
      expect(readFileSync(join(dataDir, "state.db"), "utf8")).toBe(
        "not a database, but someone's file\n",
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "names every etcd endpoint it tried when none answers, and leaves no data dir",
    async () => {
      const endpoints = [
        `http://127.0.0.1:${await closedPort()}`,
        `http://127.0.0.1:${await closedPort()}`,
      ];
      const dataDir = join(tempDir("setpoint-start-etcd-"), "data");
      const r = await runSetpoint(
        [
          "up",
          "--data-dir",
          dataDir,
          "--listen",
          "127.0.0.1:0",
          "--storage",
          "etcd",
          "--etcd-endpoints",
          endpoints.join(","),
        ],
        FAIL_TIMEOUT_MS,
      );
      expectOneLine(
        r,
        new RegExp(`cannot reach etcd at ${endpoints.join(", ")}.*--etcd-endpoints`),
      );
      expect(existsSync(dataDir)).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("setpoint up: logs", () => {
  it(
    "are readable lines with --log-format text, beside the banner on stdout",
    async () => {
      const p = await started([
        "--data-dir",
        tempDir("setpoint-log-text-"),
        "--log-format",
        "text",
        "--no-controllers",
      ]);
      await until(() => /apiserver listening/.test(p.stderr()), "the listening line");
      const line =
        p
          .stderr()
          .split("\n")
          .find((l) => l.includes("apiserver listening")) ?? "";
      expect(line).toMatch(
        new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} INFO  apiserver listening url=${p.url}$`),
      );
      for (const l of p.stderr().split("\n").filter(Boolean)) expect(l).not.toMatch(/^\{/);
      expect(p.stdout()).toContain(`export KUBECONFIG=${p.kubeconfig}`);
      const exit = await p.stop("SIGTERM");
      expect(exit.stderr).toMatch(/INFO {2}shutting down signal=SIGTERM/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "are JSON lines only, banner included as a record, when stdout and stderr are one file",
    async () => {
      const dir = tempDir("setpoint-log-json-");
      const logFile = join(dir, "out.log");
      const fd = openSync(logFile, "w");
      const child = spawn(
        process.execPath,
        [SETPOINT_BIN, "up", "--data-dir", dir, "--listen", "127.0.0.1:0", "--no-controllers"],
        { stdio: ["ignore", fd, fd] },
      );
      closeSync(fd);
      const exited = new Promise((r) => child.once("exit", r));
      cleanups.push(async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      });
      await until(
        () => readFileSync(logFile, "utf8").includes('"msg":"serving"'),
        "the serving record",
        60_000,
      );
      child.kill("SIGTERM");
      await exited;
      const lines = readFileSync(logFile, "utf8").split("\n").filter(Boolean);
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const serving = records.find((r) => r.msg === "serving");
      expect(serving).toMatchObject({
        storage: "sqlite",
        kubeconfig: join(dir, "kubeconfig"),
        controllers: null,
      });
      expect(serving?.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(records.map((r) => r.msg)).toContain("shutting down");
    },
    TEST_TIMEOUT_MS,
  );
});
