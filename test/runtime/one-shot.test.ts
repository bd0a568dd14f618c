/**
 * runOneShot against a real apiserver and a real HTTP endpoint that honours
 * Idempotency-Key as payment APIs do: whatever step the controller stops at
 * (the reconciler throwing there, or its process killed there), with duplicate
 * events and restarts, the endpoint performs each charge exactly once. An action
 * that cannot be repeated safely stops with a condition naming what to check.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { KubeObject } from "@setpoint/api";
import {
  ActionRefusedError,
  findCondition,
  isTerminalError,
  Manager,
  oneShotAnnotation,
  oneShotKey,
  readOneShotRecord,
  runOneShot,
  silentLogger,
  type TerminalError,
} from "@setpoint/runtime";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { schemalessCrd } from "../helpers/crd.ts";
import { type IdempotencyServer, startIdempotencyServer } from "../helpers/idempotency-server.ts";
import {
  addChargeController,
  type ChargeControllerOptions,
  CRASH_POINTS,
  type CrashPoint,
  type Order,
  OrderKind,
} from "./oneshot/charge-controller.ts";

const WAIT = { timeout: 15_000, interval: 25 };
const REPO_ROOT = path.resolve(import.meta.dirname, "../..");

let env: TestEnv;
let server: IdempotencyServer;

beforeAll(async () => {
  env = await startTestEnv({
    crds: [schemalessCrd("orders", "Order", { subresources: { status: {} } })],
    controllers: false,
  });
  server = await startIdempotencyServer();
});

afterAll(async () => {
  await server?.close();
  await env?.stop();
});

function order(name: string, spec: Order["spec"]): Order {
  return {
    apiVersion: "example.com/v1",
    kind: "Order",
    metadata: { name, namespace: "default" },
    spec,
  };
}

async function postCharge(key: string, body: unknown, signal: AbortSignal): Promise<string> {
  const res = await fetch(`${server.url}/charges`, {
    method: "POST",
    headers: { "idempotency-key": key },
    body: JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  if (res.status === 422) throw new ActionRefusedError(`the endpoint answered 422: ${text}`);
  if (!res.ok) throw new Error(`the endpoint answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

function performedFor(o: KubeObject): string[] {
  return server.performed.filter((p) => p.key.startsWith(`${o.metadata.uid}/`)).map((p) => p.key);
}

async function charged(name: string): Promise<Order> {
  let got: Order | undefined;
  await vi.waitFor(async () => {
    got = await env.client.get(OrderKind, name, "default");
    expect(got.status?.chargeId, JSON.stringify(got.metadata.annotations)).toBeDefined();
    expect(got.status?.observedGeneration).toBe(got.metadata.generation);
  }, WAIT);
  return got as Order;
}

/** Duplicate events: writes that change nothing the action depends on. */
async function touch(name: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await env.client.patch(
      OrderKind,
      name,
      "default",
      { metadata: { labels: { touched: String(i) } } },
      {
        type: "merge",
      },
    );
  }
}

async function withManager<T>(
  crash: ChargeControllerOptions["crash"],
  fn: () => Promise<T>,
): Promise<T> {
  const mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  addChargeController(mgr, { url: server.url, crash });
  const stop = new AbortController();
  await mgr.start(stop.signal);
  try {
    return await fn();
  } finally {
    stop.abort();
    await mgr.done;
  }
}

describe("runOneShot", () => {
  it("charges exactly once when the reconciler throws at each step, on duplicate events and across a restart", async () => {
    // One Order per step; each throws there once (twice for after-call: the retry then
    // finds the intent, calls again with the same key and gets the first answer).
    const left = new Map<string, number>(
      CRASH_POINTS.map((p) => [`throw-${p}`, p === "after-call" ? 2 : 1]),
    );
    const crash = (point: CrashPoint, o: Order) => {
      const name = o.metadata.name ?? "";
      if (name !== `throw-${point}`) return;
      const n = left.get(name) ?? 0;
      if (n === 0) return;
      left.set(name, n - 1);
      throw new Error(`crash at ${point}`);
    };
    const requestsBefore = server.requests;
    await withManager(crash, async () => {
      for (const p of CRASH_POINTS) await env.client.create(order(`throw-${p}`, { amount: 100 }));
      for (const p of CRASH_POINTS) await charged(`throw-${p}`);
      for (const p of CRASH_POINTS) await touch(`throw-${p}`, 3);
    });
    expect([...left.values()]).toEqual(CRASH_POINTS.map(() => 0));
    // A new controller process (a restart): more duplicate events, nothing more performed.
    await withManager(
      () => undefined,
      async () => {
        for (const p of CRASH_POINTS) await touch(`throw-${p}`, 2);
        for (const p of CRASH_POINTS) await charged(`throw-${p}`);
      },
    );
    for (const p of CRASH_POINTS) {
      const o = await env.client.get(OrderKind, `throw-${p}`, "default");
      const keys = performedFor(o);
      expect(keys, p).toEqual([oneShotKey(o, { name: "charge" })]);
      const charge = server.performed.find((x) => x.key === keys[0]);
      expect(o.status?.chargeId).toBe(charge?.id);
      expect(readOneShotRecord(o, "charge")).toMatchObject({
        key: keys[0],
        state: "Succeeded",
        result: charge?.id,
      });
    }
    // The after-call Order reached the endpoint twice with its key: once performed, once replayed.
    expect(server.requests - requestsBefore).toBe(CRASH_POINTS.length + 2);
  });

  it("charges again, once, for a new generation, and never for the old one", async () => {
    await withManager(
      () => undefined,
      async () => {
        await env.client.create(order("regen", { amount: 5 }));
        await charged("regen");
        await env.client.patch(
          OrderKind,
          "regen",
          "default",
          { spec: { amount: 7 } },
          { type: "merge" },
        );
        await vi.waitFor(async () => {
          const o = await env.client.get(OrderKind, "regen", "default");
          expect(o.metadata.generation).toBe(2);
          expect(o.status?.observedGeneration).toBe(2);
        }, WAIT);
        await touch("regen", 2);
      },
    );
    const o = await env.client.get(OrderKind, "regen", "default");
    expect(performedFor(o)).toEqual([
      `${o.metadata.uid}/charge/generation-1`,
      `${o.metadata.uid}/charge/generation-2`,
    ]);
  });

  it("a retry whose request changed under the same key is refused: Failed, terminal, not retried", async () => {
    let o = await env.client.create(order("reused", { amount: 5 }));
    const charge = (amount: number, crash: boolean) => ({
      name: "charge",
      retry: "idempotent" as const,
      discriminator: "once",
      call: async (key: string, signal: AbortSignal) => {
        const id = await postCharge(key, { order: o.metadata.uid, amount }, signal);
        if (crash) throw new Error("crash after the call");
        return id;
      },
    });
    await expect(runOneShot(env.client, o, charge(5, true))).rejects.toThrow(
      "crash after the call",
    );
    const key = `${o.metadata.uid}/charge/once`;
    o = await env.client.get(OrderKind, "reused", "default");
    expect(readOneShotRecord(o, "charge")).toMatchObject({ key, state: "Pending" });
    // The retry builds its request from a changed object: same key, different body (422).
    const refused = await runOneShot(env.client, o, charge(9, false)).catch((e: unknown) => e);
    expect(isTerminalError(refused)).toBe(true);
    expect((refused as TerminalError).reason).toBe("ActionRefused");
    expect((refused as Error).message).toContain(`(idempotency key ${key}) was refused`);
    expect((refused as Error).message).toContain("422");
    expect((refused as Error).message).toContain(
      `remove annotation ${oneShotAnnotation("charge")}`,
    );
    o = await env.client.get(OrderKind, "reused", "default");
    expect(readOneShotRecord(o, "charge")).toMatchObject({ key, state: "Failed" });
    // Later passes stop the same way without calling.
    const requests = server.requests;
    await expect(runOneShot(env.client, o, charge(9, false))).rejects.toThrow(/was refused/);
    expect(server.requests).toBe(requests);
    expect(performedFor(o)).toEqual([key]);
  });

  it("an unsafe action whose outcome was not recorded stops for a person, who resolves it", async () => {
    let left = 1;
    const crash = (point: CrashPoint, o: Order, action: string) => {
      // The notice took effect, and the controller stops before recording it.
      if (
        point !== "after-call" ||
        action !== "notify" ||
        o.metadata.name !== "unsafe" ||
        left === 0
      )
        return;
      left--;
      throw new Error("crash after the notice was sent");
    };
    await withManager(crash, async () => {
      await env.client.create(order("unsafe", { amount: 3, notify: true }));
      await vi.waitFor(async () => {
        const o = await env.client.get(OrderKind, "unsafe", "default");
        expect(findCondition(o.status?.conditions, "Charged")).toMatchObject({
          status: "False",
          reason: "ActionOutcomeUnknown",
        });
      }, WAIT);
      await touch("unsafe", 2); // duplicate events: still stopped, nothing sent again
      const o = await env.client.get(OrderKind, "unsafe", "default");
      const message = findCondition(o.status?.conditions, "Charged")?.message ?? "";
      const key = `${o.metadata.uid}/notify/generation-1`;
      expect(message).toContain(`idempotency key ${key}`);
      expect(message).toContain("Check the plain endpoint's log for a notice of this Order");
      expect(message).toContain(`annotation ${oneShotAnnotation("notify")}`);
      // The person checked: the notice went out. They say so, and the Order goes on.
      await env.client.patch(
        OrderKind,
        "unsafe",
        "default",
        {
          metadata: {
            annotations: {
              [oneShotAnnotation("notify")]: JSON.stringify({ key, state: "Succeeded" }),
            },
          },
        },
        { type: "merge" },
      );
      await vi.waitFor(async () => {
        const o = await env.client.get(OrderKind, "unsafe", "default");
        expect(findCondition(o.status?.conditions, "Charged")).toMatchObject({ status: "True" });
      }, WAIT);
    });
    const o = await env.client.get(OrderKind, "unsafe", "default");
    expect(
      server.performed.filter((p) => p.body.includes(o.metadata.uid ?? "-")).map((p) => p.key),
    ).toEqual([`${o.metadata.uid}/charge/generation-1`, ""]);
  });

  it("of two writers that both find no record, one records the intent and calls; the other is refused", async () => {
    const o = await env.client.create(order("race", { amount: 1 }));
    const calls: string[] = [];
    const call = async (key: string) => {
      calls.push(key);
      return "ok";
    };
    const results = await Promise.allSettled([
      runOneShot(env.client, o, { name: "race", retry: "unsafe", call }),
      runOneShot(env.client, o, { name: "race", retry: "unsafe", call }),
    ]);
    expect(calls).toHaveLength(1);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(rejected.reason?.status?.reason ?? rejected.reason?.message).toMatch(
      /Conflict|ActionOutcomeUnknown|unknown/,
    );
    // Later passes replay the recorded outcome.
    const again = await runOneShot(env.client, await env.client.get(OrderKind, "race", "default"), {
      name: "race",
      retry: "unsafe",
      call,
    });
    expect(again).toMatchObject({ called: false, result: "ok" });
    expect(calls).toHaveLength(1);
  });
});

/** Starts the charge controller as a process; resolves once it has started. */
function spawnController(markers: string, crashes: string): { child: ChildProcess; out: string[] } {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(REPO_ROOT, "test/runtime/oneshot/main.ts"),
      env.kubeconfigPath,
      server.url,
      markers,
      crashes,
    ],
    { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
  );
  const out: string[] = [];
  child.stdout
    ?.setEncoding("utf8")
    .on("data", (d: string) => out.push(...d.split("\n").filter(Boolean)));
  child.stderr?.setEncoding("utf8").on("data", (d: string) => out.push(d));
  return { child, out };
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

describe("runOneShot in a controller process killed with SIGKILL", () => {
  const markers = fs.mkdtempSync(path.join(os.tmpdir(), "setpoint-oneshot-"));
  const running: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of running) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill("SIGKILL");
        await exited(c);
      }
    }
    fs.rmSync(markers, { recursive: true, force: true });
  });

  it("each Order is charged exactly once, whichever step its controller died at", async () => {
    // The in-process test stops at every step; here a process is killed between the call
    // and its record (the step that matters), or at every step with SETPOINT_ONESHOT_ALL_KILLS=1.
    const points: CrashPoint[] = process.env.SETPOINT_ONESHOT_ALL_KILLS
      ? ["before-call", "after-call", "after-record"]
      : ["after-call"];
    const crashes = points.map((p) => `kill-${p}=${p}`).join(",");
    for (const p of points) await env.client.create(order(`kill-${p}`, { amount: 42 }));
    const kills: string[] = [];
    // Each process dies at the first step it reaches; the next one starts where it left off.
    for (let i = 0; i <= points.length; i++) {
      const { child, out } = spawnController(markers, crashes);
      running.push(child);
      if (i < points.length) {
        const { signal } = await exited(child);
        expect(signal, out.join("\n")).toBe("SIGKILL");
        kills.push(...out.filter((l) => l.startsWith("crash ")));
      } else {
        for (const p of points) await charged(`kill-${p}`);
        for (const p of points) await touch(`kill-${p}`, 2);
        child.kill("SIGTERM");
        expect(await exited(child)).toEqual({ code: 0, signal: null });
      }
    }
    expect(kills.sort()).toEqual(points.map((p) => `crash kill-${p} ${p}`).sort());
    for (const p of points) {
      const o = await env.client.get(OrderKind, `kill-${p}`, "default");
      expect(performedFor(o), p).toEqual([oneShotKey(o, { name: "charge" })]);
    }
  });
});
