/**
 * The WebApp walkthrough (README.md) with real processes, command by command:
 * `setpoint up` with its node agent and gateway, the controller as its own
 * process (main.ts --install-crd), a WebApp applied with kubectl, `kubectl wait`
 * on observedGeneration and Ready, the app fetched through the gateway, a hand
 * edit warned about and set back, and the WebApp deleted with everything it owned.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentStateData } from "../../src/agent/state/index.ts";
import { type SetpointProcess, startSetpoint } from "../../test/e2e/helpers/setpoint.ts";
import { get } from "../../test/gateway/helpers.ts";
import { eventually } from "../../test/helpers/poll.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(join(tmpdir(), "setpoint-webapp-walkthrough-"));
let up: SetpointProcess | undefined;
let controller: ChildProcess | undefined;
let controllerOut = "";
let gateway = "";

interface Run {
  code: number;
  out: string;
  err: string;
}

function kubectl(args: string[], stdin = ""): Promise<Run> {
  return new Promise((done) => {
    const child = execFile(
      "/usr/bin/kubectl",
      args,
      {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: join(dir, "home"),
          KUBECONFIG: up?.kubeconfig ?? "",
        },
        timeout: 120_000,
      },
      (err, out, errOut) => {
        done({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          out: String(out),
          err: String(errOut),
        });
      },
    );
    child.stdin?.end(stdin);
  });
}

/** The pids of the Pods the agent ran (they outlive `up` by design). */
function podPids(): number[] {
  try {
    const state = JSON.parse(
      readFileSync(join(dir, "data", "agent", "state.json"), "utf8"),
    ) as AgentStateData;
    return Object.values(state.pods).flatMap((r) =>
      r.containers.flatMap((c) => (c.process ? [c.process.pid] : [])),
    );
  } catch {
    return [];
  }
}

const WEBAPP = `apiVersion: examples.setpoint.dev/v1alpha1
kind: WebApp
metadata:
  name: shop
  namespace: default
spec:
  image: hello
  replicas: 2
  host: shop.example
`;

beforeAll(async () => {
  mkdirSync(join(dir, "home"));
  up = await startSetpoint([
    "--agent",
    "--gateway-listen",
    "127.0.0.1:0",
    "--data-dir",
    join(dir, "data"),
  ]);
  const p = up;
  gateway = await eventually(
    () => /Gateway \(IngressClass setpoint\) at http:\/\/(\S+)/.exec(p.stdout())?.[1],
    "gateway line",
  );
  controller = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(ROOT, "examples/webapp/main.ts"),
      "--kubeconfig",
      up.kubeconfig,
      "--install-crd",
    ],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  controller.stdout?.on("data", (d) => {
    controllerOut += d;
  });
  controller.stderr?.on("data", (d) => {
    controllerOut += d;
  });
}, 60_000);

afterAll(async () => {
  if (controller && controller.exitCode === null && controller.signalCode === null) {
    const exited = new Promise((r) => controller?.once("exit", r));
    controller.kill("SIGTERM");
    await exited;
  }
  await up?.stop();
  for (const pid of podPids()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("the WebApp walkthrough", () => {
  it("applies a WebApp, waits for it to roll out, serves it, sets a hand edit back, deletes it", async () => {
    // The controller installed its CRD.
    await eventually(
      async () =>
        (await kubectl(["get", "crd", "webapps.examples.setpoint.dev"])).code === 0 || undefined,
      `the CRD (controller: ${controllerOut})`,
      30_000,
    );
    const applied = await kubectl(["apply", "-f", "-"], WEBAPP);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toContain("webapp.examples.setpoint.dev/shop created");
    // Rolled out: the status is about this generation, and Ready.
    const generation = (
      await kubectl(["get", "webapp", "shop", "-o", "jsonpath={.metadata.generation}"])
    ).out;
    const waited = await kubectl([
      "wait",
      "webapp/shop",
      `--for=jsonpath={.status.observedGeneration}=${generation}`,
      "--timeout=90s",
    ]);
    expect(waited.code, waited.err + controllerOut).toBe(0);
    const ready = await kubectl(["wait", "webapp/shop", "--for=condition=Ready", "--timeout=90s"]);
    expect(ready.code, ready.err + controllerOut).toBe(0);
    const row = await kubectl(["get", "webapp", "shop"]);
    expect(row.out).toMatch(
      /^NAME\s+IMAGE\s+READY\s+URL\s+STATUS\s+AGE\nshop\s+hello\s+2\s+http:\/\/shop\.example\/\s+True\s+/,
    );
    // Served through the gateway.
    const reply = await eventually(
      async () => {
        const r = await get(gateway, "shop.example", "/").catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      "the app through the gateway",
      30_000,
    );
    expect(reply.body).toContain("shop-");
    // A hand edit of a field the controller manages: warned, then set back.
    const scaled = await kubectl(["scale", "deployment", "shop", "--replicas=5"]);
    expect(scaled.err).toContain(
      'Warning: Deployment default/shop is managed by its controller WebApp/shop (field manager "webapp-controller")',
    );
    await eventually(
      async () =>
        (await kubectl(["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"])).out ===
          "2" || undefined,
      "replicas set back to 2",
      30_000,
    );
    // Deleted: what it owned goes with it (the garbage collector).
    const deleted = await kubectl(["delete", "webapp", "shop"]);
    expect(deleted.code, deleted.err).toBe(0);
    const gone = await kubectl([
      "wait",
      "deployment/shop",
      "service/shop",
      "ingress/shop",
      "--for=delete",
      "--timeout=60s",
    ]);
    expect(gone.code, gone.err).toBe(0);
  }, 240_000);
});
