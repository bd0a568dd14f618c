// A complete test of a controller with startTestEnv (docs/runtime.md shows this file).

import { Manager, silentLogger } from "@setpoint/runtime";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { addConfigMapSetController } from "../controller.ts";
import { ConfigMapKind, configMapSet, configMapSetCrd } from "../types.ts";

let env: TestEnv;
let mgr: Manager;
const stop = new AbortController();

beforeAll(async () => {
  // A real apiserver on in-memory SQLite, over HTTP, with the CRD installed.
  env = await startTestEnv({ crds: [configMapSetCrd()] });
  mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  addConfigMapSetController(mgr);
  await mgr.start(stop.signal); // resolves once the caches have synced
});

afterAll(async () => {
  stop.abort();
  await mgr.done;
  await env.stop();
});

it("puts the ConfigMap into a namespace that matches", async () => {
  await env.client.create({
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "team-a", labels: { team: "a" } },
  });
  await env.client.create(
    configMapSet("settings", {
      namespaceSelector: { matchLabels: { team: "a" } },
      template: { data: { level: "info" } },
    }),
  );

  await vi.waitFor(
    async () => {
      const cm = await env.client.get(ConfigMapKind, "settings", "team-a");
      expect(cm.data).toEqual({ level: "info" });
    },
    { timeout: 5_000, interval: 20 },
  );
});
