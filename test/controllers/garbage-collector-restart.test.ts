/**
 * The garbage collector is level-triggered: stopped in the middle of a cascade,
 * a new one finishes it; started after owners were deleted (and their names
 * reused) while none ran, it collects exactly the orphans.
 */

import type { KubeObject } from "@setpoint/api";
import { afterAll, expect, it } from "vitest";
import type { ControllerManager } from "../../src/controllers/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile } from "../helpers/test-server.ts";
import { CM, configMap, eventually, find, gone, refTo, startControllers } from "./helpers.ts";

// Each test runs the controllers it tests.
const env = startForFile(() => startTestEnv({ controllers: false }));
const running: ControllerManager[] = [];

afterAll(async () => {
  for (const cm of running) await cm.stop();
});

async function count(ns: string): Promise<number> {
  return (await env.client.list<KubeObject>(CM, { namespace: ns })).items.length;
}

async function gcOnly(opts: { qps?: number } = {}): Promise<ControllerManager> {
  const restConfig = opts.qps ? { ...env.config, qps: opts.qps, burst: 1 } : env.config;
  const cm = await startControllers({
    restConfig,
    disabled: ["namespace", "event-ttl"],
    gc: { workers: 1 },
  });
  running.push(cm);
  return cm;
}

it("finishes a cascade that a stopped collector left half done", async () => {
  const ns = await freshNamespace(env.client);
  const owner = await configMap(env.client, ns, "owner");
  const n = 120;
  for (let i = 0; i < n; i++)
    await configMap(env.client, ns, `dep-${i}`, { owners: [refTo(owner)] });

  // A slow collector (client-side rate limit), stopped once it has started.
  const first = await gcOnly({ qps: 30 });
  await env.client.delete(CM, "owner", ns);
  await eventually(async () => (await count(ns)) < n, "the cascade started", 30_000);
  await first.stop();
  const left = await count(ns);
  expect(left).toBeGreaterThan(0);
  expect(await count(ns)).toBe(left); // nothing acts while no collector runs

  await gcOnly();
  await eventually(async () => (await count(ns)) === 0, "the cascade finished", 30_000);
});

it("catches up on owners deleted, and names reused, while it was down", async () => {
  for (const cm of running.splice(0)) await cm.stop();
  const ns = await freshNamespace(env.client);
  const a = await configMap(env.client, ns, "a");
  const b = await configMap(env.client, ns, "b");
  await configMap(env.client, ns, "dep-of-a", { owners: [refTo(a)] });
  await configMap(env.client, ns, "dep-of-b", { owners: [refTo(b)] });
  await env.client.delete(CM, "a", ns);
  await env.client.delete(CM, "b", ns);
  const b2 = await configMap(env.client, ns, "b");
  await configMap(env.client, ns, "dep-of-new-b", { owners: [refTo(b2)] });

  await gcOnly();
  await eventually(
    async () =>
      (await gone(env.client, CM, "dep-of-a", ns)) && (await gone(env.client, CM, "dep-of-b", ns)),
    "orphans collected",
  );
  expect((await find(env.client, CM, "b", ns))?.metadata.uid).toBe(b2.metadata.uid);
  expect(await gone(env.client, CM, "dep-of-new-b", ns)).toBe(false);
});
