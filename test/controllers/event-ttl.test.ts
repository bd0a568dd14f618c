/**
 * Event expiry against a real apiserver: Events quiet for longer than the TTL
 * are deleted (core/v1 and events.k8s.io/v1), one whose latest occurrence is
 * later stays, an update that moves an Event's time reschedules it, and no list
 * runs after the informers' first ones.
 */

import type { KubeObject } from "@setpoint/api";
import { lastOccurrence } from "@setpoint/runtime";
import { beforeAll, describe, expect, it } from "vitest";
import { reduceEvent } from "../../src/controllers/event-ttl.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile } from "../helpers/test-server.ts";
import { EVENT, eventually, gone, startControllers } from "./helpers.ts";

const EVENTS_V1 = { apiVersion: "events.k8s.io/v1", kind: "Event" } as const;
const TTL_MS = 1_000;
const HOUR = 3_600_000;

// Each test runs the controllers it tests.
const env = startForFile(() => startTestEnv({ controllers: false }));
const cm = startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: ["garbage-collector", "namespace"],
    eventTtl: { ttlMs: TTL_MS },
  }),
);

beforeAll(async () => {
  await eventually(() => cm.manager.isLeader, "controllers running");
});

/** A timestamp `ms` from now (negative: in the past), to the second. */
function at(ms: number): string {
  return new Date(Date.now() + ms).toISOString().replace(/\.\d+Z$/, "Z");
}

function coreEvent(ns: string, name: string, lastTimestamp: string): KubeObject {
  return {
    ...EVENT,
    metadata: { name, namespace: ns },
    involvedObject: { apiVersion: "v1", kind: "ConfigMap", name: "x", namespace: ns },
    reason: "Tested",
    message: "a test event",
    type: "Normal",
    source: { component: "test" },
    count: 1,
    firstTimestamp: lastTimestamp,
    lastTimestamp,
  };
}

describe("event TTL", () => {
  it("deletes Events quiet for longer than the TTL and keeps later ones", async () => {
    const ns = await freshNamespace(env.client);
    await eventually(() => cm.manager.readyz.run().then((r) => r.every((c) => c.result.ok)));
    const listsBefore = cm.manager.client.stats.byVerb.list ?? 0;
    // Occurring an hour from now (a reporter's clock ahead): it stays for that hour.
    await env.client.create(coreEvent(ns, "later", at(HOUR)));
    await env.client.create(coreEvent(ns, "now", at(0)));
    await env.client.create({
      ...EVENTS_V1,
      metadata: { name: "now-v1", namespace: ns },
      eventTime: new Date().toISOString(),
      reportingController: "example.com/test",
      reportingInstance: "test-1",
      action: "Testing",
      reason: "Tested",
      type: "Normal",
      regarding: { apiVersion: "v1", kind: "ConfigMap", name: "x", namespace: ns },
    });

    await eventually(
      async () =>
        (await gone(env.client, EVENT, "now", ns)) &&
        (await gone(env.client, EVENTS_V1, "now-v1", ns)),
      "expired Events deleted",
    );
    expect(await gone(env.client, EVENT, "later", ns)).toBe(false);

    // An update that moves the Event's time back reschedules it.
    await env.client.patch(
      EVENT,
      "later",
      ns,
      { firstTimestamp: at(-HOUR), lastTimestamp: at(-HOUR) },
      { type: "merge" },
    );
    await eventually(() => gone(env.client, EVENT, "later", ns), "rescheduled Event deleted");
    // Expiry needs no listing: the informers listed once, at start.
    expect(cm.manager.client.stats.byVerb.list ?? 0).toBe(listsBefore);
  });
});

describe("event expiry time", () => {
  it("is the latest of the Event's timestamps", () => {
    const e = reduceEvent({
      ...EVENT,
      metadata: { name: "e", creationTimestamp: "2024-01-01T00:00:00Z", labels: { a: "b" } },
      firstTimestamp: "2024-01-01T00:00:00Z",
      lastTimestamp: "2024-01-01T01:00:00Z",
      message: "dropped",
      series: { count: 3, lastObservedTime: "2024-01-01T02:00:00.000000Z" },
    });
    expect(e.message).toBeUndefined();
    expect(e.metadata.labels).toBeUndefined();
    // What expiry is measured from, read back from what the informer keeps.
    expect(lastOccurrence(e)).toBe("2024-01-01T02:00:00.000000Z");
    expect(lastOccurrence({ ...e, series: undefined })).toBe("2024-01-01T01:00:00Z");
  });
});
