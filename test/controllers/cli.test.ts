/**
 * The controllers from the command line, as real processes: `setpoint up` runs
 * them in process by default (over https with its loopback credentials);
 * `setpoint up --no-controllers` beside `setpoint controller-manager` runs them
 * in a process of their own; bad flags are refused.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { KubeObject } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parseDuration } from "../../src/cli/flags.ts";
import { BUILTIN_CONTROLLER_NAMES, CONTROLLER_MANAGER_LEASE } from "../../src/controllers/index.ts";
import {
  runSetpoint,
  SETPOINT_BIN,
  type SetpointProcess,
  startSetpoint,
} from "../e2e/helpers/setpoint.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { CM, configMap, eventually, gone, NS, refTo } from "./helpers.ts";

const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "setpoint-cm-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function up(args: string[]): Promise<{ proc: SetpointProcess; client: Client }> {
  const proc = await startSetpoint(["--data-dir", tempDir(), ...args]);
  cleanups.push(async () => {
    await proc.stop();
  });
  const client = new Client(loadKubeconfig({ path: proc.kubeconfig }));
  cleanups.push(() => client.close());
  return { proc, client };
}

/** Checks that deleting an owner collects its dependent and deleting a namespace completes. */
async function controllersAct(client: Client): Promise<void> {
  const ns = await freshNamespace(client);
  const owner = await configMap(client, ns, "owner");
  await configMap(client, ns, "dep", { owners: [refTo(owner)] });
  await client.delete(CM, "owner", ns);
  await eventually(() => gone(client, CM, "dep", ns), "dependent collected", 30_000);
  await client.delete(NS, ns);
  await eventually(() => gone(client, NS, ns), "namespace deleted", 30_000);
}

describe("durations", () => {
  it("parse as Go durations", () => {
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("250ms")).toBe(250);
    for (const bad of ["", "1", "h", "1d", "-1h", "0s", "1h "]) {
      expect(() => parseDuration(bad), bad).toThrow(/invalid duration/);
    }
  });
});

describe("setpoint controller-manager", () => {
  it("refuses an unknown controller name, naming the known ones, under either flag name", async () => {
    // --disable-controllers as on `setpoint up`; --disable is its deprecated old name.
    const results = await Promise.all([
      runSetpoint(["controller-manager", "--disable-controllers", "gc"]),
      runSetpoint(["controller-manager", "--disable", "gc"]),
      runSetpoint(["up", "--disable-controllers", "gc"]),
    ]);
    for (const r of results) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('unknown controller "gc"');
      expect(r.stderr).toContain(BUILTIN_CONTROLLER_NAMES.join(", "));
    }
    // Three cold starts of the CLI at once: slow on a loaded 2-core machine.
  }, 90_000);

  it("names the flag of an address in use in one line, and exits 1", async () => {
    const held = net.createServer();
    await new Promise<void>((r) => held.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => held.close(() => r())));
    const port = (held.address() as net.AddressInfo).port;
    // Nothing needs to answer at the kubeconfig's server: the listen fails first.
    const kubeconfig = path.join(tempDir(), "kubeconfig");
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server: "http://127.0.0.1:1" } }],
        users: [{ name: "u", user: {} }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
    const base = ["controller-manager", "--kubeconfig", kubeconfig, "--log-level", "error"];
    const [metrics, health] = await Promise.all([
      runSetpoint([...base, "--metrics-addr", `127.0.0.1:${port}`]),
      runSetpoint([...base, "--health-addr", `127.0.0.1:${port}`, "--metrics-addr", "127.0.0.1:0"]),
    ]);
    for (const [r, flag] of [
      [metrics, "--metrics-addr"],
      [health, "--health-addr"],
    ] as const) {
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toBe(
        `setpoint controller-manager: 127.0.0.1:${port} is already in use by another process; ` +
          `serve on another address with ${flag} HOST:PORT\n`,
      );
    }
  });

  it("runs in `setpoint up` by default, holding the controller managers' Lease", async () => {
    const { proc, client } = await up([]);
    expect(proc.stdout()).toContain(`Built-in controllers: ${BUILTIN_CONTROLLER_NAMES.join(", ")}`);
    await controllersAct(client);
    const lease = await client.get<KubeObject>(LEASE, CONTROLLER_MANAGER_LEASE, "kube-system");
    expect((lease.spec as { holderIdentity?: string }).holderIdentity).toBeTruthy();
  });

  it("runs as its own process beside `setpoint up --no-controllers`", async () => {
    const { proc, client } = await up(["--no-controllers"]);
    expect(proc.stdout()).toContain("Built-in controllers: off");
    const child: ChildProcess = spawn(
      process.execPath,
      [
        SETPOINT_BIN,
        "controller-manager",
        "--kubeconfig",
        proc.kubeconfig,
        "--leader-elect",
        "--disable-controllers",
        "event-ttl",
        "--health-addr",
        "127.0.0.1:0",
        "--log-level",
        "warn",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
    cleanups.push(async () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    });
    const health = await eventually(
      () => /health on (\S+)/.exec(stdout)?.[1],
      "controller-manager started",
      30_000,
    );
    expect(stdout).toContain(
      `running ${BUILTIN_CONTROLLER_NAMES.filter((n) => n !== "event-ttl").join(", ")} against https://`,
    );
    await eventually(
      async () => (await fetch(`http://${health}/readyz`)).status === 200,
      "ready",
      30_000,
    );
    await controllersAct(client);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    // It released the Lease on the way out.
    const lease = await client.get<KubeObject>(LEASE, CONTROLLER_MANAGER_LEASE, "kube-system");
    expect((lease.spec as { holderIdentity?: string }).holderIdentity ?? "").toBe("");
  }, 90_000);
});
