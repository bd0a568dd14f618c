// The controller against a real control plane from setpoint/testenv, with Node's
// test runner (test/packaging copies this file into a project of its own).
import assert from "node:assert/strict";
import { test } from "node:test";
// #region imports
import { Client, Manager, silentLogger } from "@setpoint/runtime";
import { startTestEnv } from "setpoint/testenv";
// #endregion
import { addCopier, COPY_LABEL, type ConfigMap, ConfigMapKind } from "../src/copier.js";

async function eventually<T>(read: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await read();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

test("the copier keeps an owned copy of a labelled ConfigMap", async () => {
  const env = await startTestEnv();
  const stop = new AbortController();
  const mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  try {
    // One runtime: the test environment's client is the consumer's Client class.
    assert.ok(env.client instanceof Client);
    addCopier(mgr);
    await mgr.start(stop.signal);
    const source: ConfigMap = {
      ...ConfigMapKind,
      metadata: { name: "settings", namespace: "default", labels: { [COPY_LABEL]: "yes" } },
      data: { level: "info" },
    };
    const created = await env.client.create(source);
    const copy = await eventually(async () => {
      const cm = await env.client.get(ConfigMapKind, "settings-copy", "default");
      assert.deepEqual(cm.data, { level: "info" });
      return cm;
    });
    assert.equal(copy.metadata.ownerReferences?.[0]?.uid, created.metadata.uid);
  } finally {
    stop.abort();
    await mgr.done;
    await env.stop();
  }
});
