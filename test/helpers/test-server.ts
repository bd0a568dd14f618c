/**
 * The apiserver the project's tests start when they reach into the server (its
 * store to compact, its registry to add a type, smaller limits, https with a
 * token) or want many clients of it: the test environment's control plane
 * (src/testenv/controlplane.ts) without the built-in controllers, with background
 * compaction off (tests compact explicitly). Tests that need none of this use
 * startTestEnv. startForFile runs either for the tests of one file.
 */

import { Client, type RestConfig } from "@setpoint/runtime";
import { afterAll, beforeAll } from "vitest";
import {
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "../../src/testenv/controlplane.ts";

export type TestServerOptions = Omit<ControlPlaneOptions, "compaction">;

export interface TestServer extends ControlPlane {
  /** Another client of the server (with `overrides` to its config), closed by stop(). */
  newClient(overrides?: Partial<RestConfig>): Client;
}

/** Starts an apiserver on an in-memory store with background compaction off. */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const plane = await startControlPlane({ ...opts, compaction: false });
  const clients: Client[] = [];
  return {
    ...plane,
    newClient(overrides = {}) {
      const c = new Client({ ...plane.config, ...overrides });
      clients.push(c);
      return c;
    },
    async stop() {
      for (const c of clients) c.close();
      await plane.stop();
    },
  };
}

/**
 * Starts something with a stop() (a test server, a test environment, a controller
 * manager) before the tests of the calling file or describe block, and stops it
 * after them. What it returns stands for the started object: reading a member
 * before the start (when the file loads) throws. Hooks registered after this call
 * run after the start and, being torn down first, before the stop.
 */
export function startForFile<T extends { stop(): Promise<void> }>(start: () => Promise<T>): T {
  let started: T | undefined;
  beforeAll(async () => {
    started = await start();
  });
  afterAll(async () => {
    await started?.stop();
  });
  return new Proxy({} as T, {
    get(_, key) {
      if (!started) throw new Error(`read ${String(key)} before beforeAll started it`);
      const v: unknown = Reflect.get(started, key);
      return typeof v === "function" ? v.bind(started) : v;
    },
  });
}
