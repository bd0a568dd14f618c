/**
 * The log relay (src/agent/log-relay/): a real `setpoint log-relay` process
 * between real `sh` processes and their log files. Covered: lines of stdout and
 * stderr in the CRI format with their times, a line longer than 16 KiB cut into
 * `P` records, the output of a process that ended before the relay read it, a
 * relay killed with SIGKILL while a process writes (the process keeps running
 * and nothing written meanwhile is lost once a new relay runs), and rotation.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  fixedTimestamp,
  formatTimestamp,
  LineFramer,
  LogRelayClient,
  LogRelayProcess,
  parseRecord,
  parseTimestamp,
  pipesLeft,
} from "../../src/agent/log-relay/index.ts";
import { signalGroup } from "../../src/agent/pods/proc.ts";
import { spawnContainer } from "../../src/agent/pods/process-runner.ts";
import { eventually, removeTempDirs, tempDir } from "./helpers.ts";

const NOOP = { debug() {}, info() {}, warn() {}, error() {} };
const started: number[] = [];
const relays: LogRelayProcess[] = [];
const clients: LogRelayClient[] = [];

afterAll(async () => {
  for (const pid of started) signalGroup(pid, "SIGKILL");
  for (const c of clients) c.close();
  for (const r of relays) await r.stop();
  removeTempDirs();
});

describe("the CRI format", () => {
  const ns = 1_475_713_029_669_794_200n;
  it("writes times as Go's RFC3339Nano and reads them back with nine digits", () => {
    expect(formatTimestamp(ns)).toBe("2016-10-06T00:17:09.6697942Z");
    expect(formatTimestamp(ns, true)).toBe("2016-10-06T00:17:09.669794200Z");
    expect(formatTimestamp(1_475_713_029_000_000_000n)).toBe("2016-10-06T00:17:09Z");
    expect(fixedTimestamp("2016-10-06T00:17:09.6697942Z")).toBe("2016-10-06T00:17:09.669794200Z");
    expect(parseTimestamp("2016-10-06T00:17:09.6697942Z")).toBe(ns);
    expect(parseTimestamp("2016-10-06T02:17:09.6697942+02:00")).toBe(ns);
  });

  it("frames whole lines as F records and cuts long ones into P records", () => {
    const f = new LineFramer("stdout");
    expect(f.push(Buffer.from("one\ntw"), ns).toString()).toBe(
      "2016-10-06T00:17:09.6697942Z stdout F one\n",
    );
    expect(f.push(Buffer.from("o\n"), ns).toString()).toBe(
      "2016-10-06T00:17:09.6697942Z stdout F two\n",
    );
    const long = f.push(Buffer.from(`${"x".repeat(16 * 1024 + 5)}\n`), ns).toString();
    const records = long
      .split("\n")
      .filter(Boolean)
      .map((l) => parseRecord(Buffer.from(l)));
    expect(records.map((r) => [r?.partial, r?.content.length])).toEqual([
      [true, 16 * 1024],
      [false, 5],
    ]);
    expect(f.push(Buffer.from("no newline"), ns).length).toBe(0);
    expect(f.end(ns).toString()).toBe("2016-10-06T00:17:09.6697942Z stdout F no newline\n");
  });
});

describe("a relay process", () => {
  const dataDir = tempDir("setpoint-log-relay-");
  const logDir = join(dataDir, "pods", "default_p_u1", "c");
  const relay = new LogRelayProcess({ dataDir, logger: NOOP, maxBytes: 4096, maxFiles: 3 });
  relays.push(relay);
  const client = new LogRelayClient(dataDir);
  clients.push(client);

  async function run(name: string, script: string) {
    // As the pod worker does: the agent holds a run's pipes until the run ended and the relay has them.
    const logPath = join(logDir, `${name}.log`);
    const r = await spawnContainer({
      argv: ["sh", "-c", script],
      cwd: dataDir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      logPath,
      image: "x",
      imageID: "x",
      logRelay: client,
    });
    if (!r.ok) throw new Error(r.message);
    started.push(r.process.pid);
    r.child.once("exit", () => client.release(logPath));
    return { logPath, child: r.child, proc: r.process };
  }

  const records = (path: string) =>
    readFileSync(path)
      .toString()
      .split("\n")
      .filter(Boolean)
      .map((l) => parseRecord(Buffer.from(`${l}\n`)));

  it("writes stdout and stderr lines with their times, also of a process that ended at once", async () => {
    const { logPath, proc } = await run("0", "echo out-1; echo err-1 >&2; echo out-2");
    expect(proc.logFormat).toBe("cri");
    // Started after the process: its output waited in the pipes.
    relay.ensure();
    await relay.running();
    await eventually("the run relayed", () => !pipesLeft(logPath) && client.holding === 0);
    const got = records(logPath);
    expect(got.map((r) => `${r?.stream} ${r?.content.toString()}`).sort()).toEqual([
      "stderr err-1\n",
      "stdout out-1\n",
      "stdout out-2\n",
    ]);
    for (const r of got) {
      const ns = parseTimestamp(r?.time ?? "") ?? 0n;
      expect(Math.abs(Number(ns / 1_000_000n) - Date.now())).toBeLessThan(60_000);
    }
  });

  it("loses nothing and kills nothing when the relay is killed while a process writes", async () => {
    const { logPath, child } = await run(
      "1",
      "i=0; while [ $i -lt 60 ]; do echo line $i; i=$((i+1)); sleep 0.05; done",
    );
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    await eventually("some lines", () => records(logPath).length >= 5);
    const old = relay.identity;
    if (old) signalGroup(old.pid, "SIGKILL");
    await eventually("the relay gone", () => relay.identity === undefined);
    await new Promise((r) => setTimeout(r, 500));
    expect(relay.ensure()).toBe("started");
    expect(await exited).toBe(0);
    await eventually("the run relayed", () => !pipesLeft(logPath));
    // Rotated at 4 KiB into at most 3 files: read them oldest first.
    const files = readdirSync(logDir)
      .filter((n) => n.startsWith("1.log"))
      .sort()
      .reverse();
    const lines = files.flatMap((f) =>
      records(join(logDir, f)).map((r) => r?.content.toString().trim()),
    );
    expect(lines).toEqual(Array.from({ length: 60 }, (_, i) => `line ${i}`));
  }, 30_000);

  it("rotates past the size limit, keeping maxFiles files", async () => {
    const { logPath, child } = await run(
      "2",
      `i=0; while [ $i -lt 300 ]; do echo "line $i ${"y".repeat(40)}"; i=$((i+1)); [ $((i % 20)) -eq 0 ] && sleep 0.05; done; true`,
    );
    await new Promise((r) => child.once("exit", r));
    await eventually("the run relayed", () => !pipesLeft(logPath));
    const files = readdirSync(logDir).filter((n) => n.startsWith("2.log"));
    expect(files.sort()).toEqual(["2.log", "2.log.1", "2.log.2"]);
    const all = [`${logPath}.2`, `${logPath}.1`, logPath].flatMap((f) => records(f));
    expect(all.at(-1)?.content.toString()).toMatch(/^line 299 /);
    // The oldest lines went with the rotation; what is kept runs on without a gap.
    const numbers = all.map((r) => Number(/^line (\d+)/.exec(r?.content.toString() ?? "")?.[1]));
    expect(numbers).toEqual(numbers.map((_, i) => numbers[0] + i));
  });
});
