/**
 * The event recorder against a real apiserver: deduplication, new series, spam
 * filter, one write at a time in the order recorded, the bound on waiting Events.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import {
  EVENT_QUEUE_SIZE,
  EVENT_SPAM_BURST,
  Recorder,
} from "../../packages/runtime/src/manager/events.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const EVENT = { apiVersion: "v1", kind: "Event" };
type Event = KubeObject & {
  count?: number;
  reason?: string;
  message?: string;
  type?: string;
  action?: string;
};

const env = startForFile(startTestServer);

async function target(): Promise<KubeObject> {
  const ns = await freshNamespace(env.client, "ev");
  return env.client.create<KubeObject>({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "obj", namespace: ns },
  });
}

async function eventsIn(ns: string): Promise<Event[]> {
  return (await env.client.list<Event>(EVENT, { namespace: ns })).items;
}

describe("Recorder", () => {
  it("folds identical events into one object with a count", async () => {
    const obj = await target();
    const ns = obj.metadata.namespace!;
    const rec = new Recorder(env.client, { component: "demo", instance: "pod-1" });
    for (let i = 0; i < 5; i++) rec.warning(obj, "Failed", "could not reach the backend");
    await rec.flush();
    rec.warning(obj, "Failed", "could not reach the backend");
    rec.normal(obj, "Synced", "all good");
    await rec.flush();
    const events = await eventsIn(ns);
    expect(events).toHaveLength(2);
    const failed = events.find((e) => e.reason === "Failed")!;
    expect(failed).toMatchObject({
      type: "Warning",
      count: 6,
      message: "could not reach the backend",
      involvedObject: { kind: "ConfigMap", name: "obj", namespace: ns, uid: obj.metadata.uid },
      source: { component: "demo", host: "pod-1" },
      reportingComponent: "demo",
    });
    expect(failed.metadata.name).toMatch(/^obj\./);
    expect(events.find((e) => e.reason === "Synced")?.count).toBe(1);
  });

  it("records an action, and keeps Events that differ only in it apart", async () => {
    const obj = await target();
    const ns = obj.metadata.namespace!;
    const rec = new Recorder(env.client, { component: "demo" });
    rec.warning(obj, "InvalidSpec", "size must be positive", { action: "TerminalError" });
    rec.warning(obj, "InvalidSpec", "size must be positive", { action: "TerminalError" });
    rec.warning(obj, "InvalidSpec", "size must be positive");
    await rec.flush();
    const events = await eventsIn(ns);
    expect(events.map((e) => [e.action ?? "", e.count]).sort()).toEqual([
      ["", 1],
      ["TerminalError", 2],
    ]);
  });

  it("starts a new Event when the old one is gone", async () => {
    const obj = await target();
    const ns = obj.metadata.namespace!;
    const rec = new Recorder(env.client, { component: "demo" });
    rec.normal(obj, "Tick", "t");
    await rec.flush();
    const [first] = await eventsIn(ns);
    await env.client.delete(EVENT, first.metadata.name!, ns);
    rec.normal(obj, "Tick", "t");
    await rec.flush();
    const after = await eventsIn(ns);
    expect(after).toHaveLength(1);
    expect(after[0].metadata.name).not.toBe(first.metadata.name);
    expect(after[0].count).toBe(2);
  });

  it("the spam filter bounds events per object", async () => {
    const obj = await target();
    const ns = obj.metadata.namespace!;
    const rec = new Recorder(env.client, { component: "demo", now: () => 1_000 });
    for (let i = 0; i < EVENT_SPAM_BURST + 10; i++) rec.normal(obj, "Tick", `message ${i}`);
    await rec.flush();
    expect(await eventsIn(ns)).toHaveLength(EVENT_SPAM_BURST);
  });

  it("writes one Event at a time, in the order recorded", async () => {
    const obj = await target();
    const ns = obj.metadata.namespace!;
    let inFlight = 0;
    let most = 0;
    const counted = {
      create: async <T extends KubeObject>(o: T): Promise<T> => {
        most = Math.max(most, ++inFlight);
        try {
          return await env.client.create(o);
        } finally {
          inFlight--;
        }
      },
      patch: env.client.patch.bind(env.client),
    };
    const rec = new Recorder(counted, { component: "demo" });
    for (let i = 0; i < 20; i++) rec.normal(obj, "Step", `step ${i}`);
    await rec.flush();
    expect(most).toBe(1);
    const written = (await eventsIn(ns)).sort(
      (a, b) =>
        String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)) ||
        Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion),
    );
    expect(written.map((e) => e.message)).toEqual(
      Array.from({ length: 20 }, (_, i) => `step ${i}`),
    );
  });

  it(`drops Events beyond ${EVENT_QUEUE_SIZE} waiting to be written`, async () => {
    const ns = await freshNamespace(env.client, "evq");
    const rec = new Recorder(env.client, { component: "demo" });
    // Objects of their own, so that the spam filter (per object) lets each through.
    const extra = 50;
    for (let i = 0; i < EVENT_QUEUE_SIZE + extra; i++) {
      rec.normal(
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `o${i}`, namespace: ns, uid: `u${i}` },
        },
        "Burst",
        "one of many",
      );
    }
    await rec.flush();
    // The first is written at once; the queue holds the next EVENT_QUEUE_SIZE.
    expect(await eventsIn(ns)).toHaveLength(EVENT_QUEUE_SIZE + 1);
  });

  it("events about cluster-scoped objects go to the default namespace; failures never throw", async () => {
    const nsObj = await env.client.get<KubeObject>(
      { apiVersion: "v1", kind: "Namespace" },
      "default",
    );
    const rec = new Recorder(env.client, { component: "demo" });
    const reason = `Cluster${Date.now()}`;
    rec.normal(nsObj, reason, "about a namespace");
    // An object without a name cannot be recorded: ignored, not thrown.
    rec.normal({ apiVersion: "v1", kind: "ConfigMap", metadata: {} }, "X", "y");
    await rec.flush();
    const events = (await eventsIn("default")).filter((e) => e.reason === reason);
    expect(events).toHaveLength(1);
    expect(events[0].involvedObject).toMatchObject({ kind: "Namespace", name: "default" });
  });
});
