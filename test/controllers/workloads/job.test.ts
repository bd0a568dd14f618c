/**
 * The job and ttl-after-finished controllers against a real apiserver over
 * HTTP. The tests play the kubelet (job-pods.ts): they write the Pods'
 * phases through the status subresource. Covered: Pods named and labelled as
 * Kubernetes makes them, parallelism and completions (NonIndexed and
 * Indexed, completedIndexes), the tracking finalizer and exact-once counts,
 * the status and conditions a finished Job ends with, backoffLimit with the
 * Pod failure backoff, activeDeadlineSeconds, suspend and resume, Events,
 * the finalizer freed from Pods of a Job deleted with Orphan, and deletion
 * after ttlSecondsAfterFinished; the pure parts (indexes, backoff) on their own.
 */
import type { Job, JobStatus, Pod } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { BUILTIN_CONTROLLER_NAMES } from "../../../src/controllers/index.ts";
import {
  BackoffStore,
  firstPendingIndexes,
  formatIndexes,
  parseIndexes,
  podGenerateName,
  remainingBackoffMs,
  withIndexes,
} from "../../../src/controllers/job/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { sleep } from "../../helpers/poll.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { EVENT, eventually, find, startControllers } from "../helpers.ts";
import { finishPod, jobPods, runningPods, runPod } from "./job-pods.ts";

const RUN = ["job", "ttl-after-finished", "garbage-collector"];
const env = startForFile(() => startTestEnv({ controllers: false }));
startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter((n) => !RUN.includes(n)),
  }),
);

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const FINALIZER = "batch.kubernetes.io/job-tracking";
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

function job(ns: string, name: string, spec: Partial<NonNullable<Job["spec"]>> = {}): Job {
  return {
    ...JOB,
    metadata: { name, namespace: ns },
    spec: {
      template: {
        spec: { containers: [{ name: "work", image: "busybox:1.36" }], restartPolicy: "Never" },
      },
      ...spec,
    },
  };
}

const getJob = (ns: string, name: string) => env.client.get<Job>(JOB, name, ns);

async function until(ns: string, name: string, what: string, ok: (s: JobStatus) => boolean) {
  return eventually(async () => {
    const j = await getJob(ns, name);
    return ok(j.status ?? {}) ? j : undefined;
  }, what);
}

function condition(j: Job, type: string) {
  return j.status?.conditions?.find((c) => c.type === type);
}

async function eventsOf(
  ns: string,
  name: string,
): Promise<{ reason: string; message: string; type: string }[]> {
  const list = await env.client.list(EVENT, { namespace: ns });
  return list.items
    .map(
      (e) =>
        e as unknown as {
          reason: string;
          message: string;
          type: string;
          involvedObject: { name: string; kind: string };
          source?: { component?: string };
        },
    )
    .filter((e) => e.involvedObject.kind === "Job" && e.involvedObject.name === name)
    .map((e) => {
      expect(e.source?.component).toBe("job-controller");
      return { reason: e.reason, message: e.message, type: e.type };
    });
}

/** Succeeds the running Pods as they appear until `n` have succeeded. */
async function succeedPods(j: Job, n: number): Promise<void> {
  const done = new Set<string>();
  await eventually(async () => {
    for (const p of await runningPods(env.client, j)) {
      if (done.size >= n) break;
      if (done.has(p.metadata.uid ?? "")) continue;
      await finishPod(env.client, p, "Succeeded");
      done.add(p.metadata.uid ?? "");
    }
    return done.size >= n;
  }, `${n} Pods succeeded`);
}

describe("job controller", () => {
  it("runs a Job to completion: Pods, counts, conditions, completionTime and Events as Kubernetes writes them", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(job(ns, "work", { completions: 3, parallelism: 2 }));
    const uid = created.metadata.uid ?? "";
    const two = await eventually(async () => {
      const pods = await jobPods(env.client, created);
      return pods.length === 2 ? pods : undefined;
    }, "2 Pods");
    for (const p of two) {
      expect(p.metadata.name).toMatch(/^work-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(p.metadata.finalizers).toEqual([FINALIZER]);
      expect(p.metadata.labels).toEqual({
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "work",
        "controller-uid": uid,
        "job-name": "work",
      });
      expect(p.metadata.ownerReferences).toEqual([
        {
          apiVersion: "batch/v1",
          kind: "Job",
          name: "work",
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const running = await until(ns, "work", "2 active", (s) => s.active === 2);
    expect(running.status?.startTime).toMatch(RFC3339);
    expect(running.status).toMatchObject({
      active: 2,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
    });

    await runPod(env.client, two[0] as Pod);
    await until(ns, "work", "1 ready", (s) => s.ready === 1);

    await succeedPods(created, 3);
    const done = await until(ns, "work", "Complete", (s) =>
      (s.conditions ?? []).some((c) => c.type === "Complete"),
    );
    const s = done.status as JobStatus;
    const t = s.completionTime;
    expect(t).toMatch(RFC3339);
    expect(s.conditions).toEqual([
      {
        type: "SuccessCriteriaMet",
        status: "True",
        reason: "CompletionsReached",
        message: "Reached expected number of succeeded pods",
        lastProbeTime: expect.stringMatching(RFC3339),
        lastTransitionTime: expect.stringMatching(RFC3339),
      },
      {
        type: "Complete",
        status: "True",
        reason: "CompletionsReached",
        message: "Reached expected number of succeeded pods",
        lastProbeTime: t,
        lastTransitionTime: t,
      },
    ]);
    expect(Object.keys(s).sort()).toEqual([
      "completionTime",
      "conditions",
      "ready",
      "startTime",
      "succeeded",
      "terminating",
      "uncountedTerminatedPods",
    ]);
    expect(s).toMatchObject({
      succeeded: 3,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
    });
    // Every finished Pod was counted once and let go.
    const pods = await jobPods(env.client, created);
    expect(pods).toHaveLength(3);
    for (const p of pods) expect(p.metadata.finalizers ?? []).toEqual([]);
    const events = await eventually(async () => {
      const e = await eventsOf(ns, "work");
      return e.some((x) => x.reason === "Completed") ? e : undefined;
    }, "Completed event");
    expect(events.filter((e) => e.reason === "SuccessfulCreate")).toHaveLength(3);
    expect(events.find((e) => e.reason === "SuccessfulCreate")?.message).toMatch(
      /^Created pod: work-/,
    );
    expect(events.find((e) => e.reason === "Completed")).toEqual({
      reason: "Completed",
      message: "Job completed",
      type: "Normal",
    });
  });

  it("runs an Indexed Job: one Pod per index, named, labelled and addressed by it; completedIndexes", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(
      job(ns, "idx", { completions: 3, parallelism: 3, completionMode: "Indexed" }),
    );
    const pods = await eventually(async () => {
      const p = await jobPods(env.client, created);
      return p.length === 3 ? p : undefined;
    }, "3 Pods");
    const byIndex = new Map<string, Pod>();
    for (const p of pods) {
      const ix = p.metadata.annotations?.["batch.kubernetes.io/job-completion-index"] ?? "";
      expect(p.metadata.labels?.["batch.kubernetes.io/job-completion-index"]).toBe(ix);
      expect(p.metadata.name).toMatch(new RegExp(`^idx-${ix}-[a-z0-9]{5}$`));
      expect(p.spec?.hostname).toBe(`idx-${ix}`);
      expect(p.spec?.containers[0]?.env).toEqual([
        {
          name: "JOB_COMPLETION_INDEX",
          valueFrom: {
            fieldRef: {
              apiVersion: "v1",
              fieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']",
            },
          },
        },
      ]);
      byIndex.set(ix, p);
    }
    expect([...byIndex.keys()].sort()).toEqual(["0", "1", "2"]);
    await finishPod(env.client, byIndex.get("2") as Pod, "Succeeded");
    await finishPod(env.client, byIndex.get("0") as Pod, "Succeeded");
    const partial = await until(ns, "idx", "indexes 0 and 2", (s) => s.completedIndexes === "0,2");
    expect(partial.status).toMatchObject({ succeeded: 2, active: 1 });
    // A failed index is run again, by a new Pod with the same index.
    await finishPod(env.client, byIndex.get("1") as Pod, "Failed", 60_000);
    const again = await eventually(async () => {
      const r = await runningPods(env.client, created);
      return r.length === 1 ? r[0] : undefined;
    }, "index 1 again");
    expect(again?.metadata.annotations?.["batch.kubernetes.io/job-completion-index"]).toBe("1");
    await finishPod(env.client, again as Pod, "Succeeded");
    const done = await until(ns, "idx", "Complete", (s) =>
      (s.conditions ?? []).some((c) => c.type === "Complete"),
    );
    expect(done.status).toMatchObject({ completedIndexes: "0-2", succeeded: 3, failed: 1 });
  });

  it("waits out the Pod failure backoff, then fails the Job past backoffLimit (FailureTarget, then Failed)", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(
      job(ns, "flaky", { backoffLimit: 1, parallelism: 2, completions: 2 }),
    );
    const [a, b] = await eventually(async () => {
      const p = await runningPods(env.client, created);
      return p.length === 2 ? p : undefined;
    }, "2 Pods");
    // Failed just now: its replacement waits 10 s.
    await finishPod(env.client, a as Pod, "Failed");
    await until(ns, "flaky", "1 failed", (s) => s.failed === 1);
    await sleep(1_500);
    expect(await runningPods(env.client, created)).toHaveLength(1);
    expect((await getJob(ns, "flaky")).status?.active).toBe(1);
    // A second failure: twice, over the limit of 1.
    await finishPod(env.client, b as Pod, "Failed", 60_000);
    const failed = await until(ns, "flaky", "Failed", (s) =>
      (s.conditions ?? []).some((c) => c.type === "Failed"),
    );
    const s = failed.status as JobStatus;
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      [
        "FailureTarget",
        "True",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
      ],
      ["Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"],
    ]);
    expect(s).toMatchObject({ failed: 2, ready: 0, terminating: 0, uncountedTerminatedPods: {} });
    expect(s.completionTime).toBeUndefined();
    expect(s.succeeded).toBeUndefined();
    const events = await eventually(async () => {
      const e = await eventsOf(ns, "flaky");
      return e.some((x) => x.reason === "BackoffLimitExceeded") ? e : undefined;
    }, "BackoffLimitExceeded event");
    expect(events.find((e) => e.reason === "BackoffLimitExceeded")).toEqual({
      reason: "BackoffLimitExceeded",
      message: "Job has reached the specified backoff limit",
      type: "Warning",
    });
  });

  it("fails a Job running past activeDeadlineSeconds, deleting its Pods and counting them failed", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(
      job(ns, "slow", { activeDeadlineSeconds: 2, parallelism: 2, completions: 4 }),
    );
    const pods = await eventually(async () => {
      const p = await runningPods(env.client, created);
      return p.length === 2 ? p : undefined;
    }, "2 Pods");
    await runPod(env.client, pods[0] as Pod);
    const failed = await until(ns, "slow", "Failed", (s) =>
      (s.conditions ?? []).some((c) => c.type === "Failed"),
    );
    expect(failed.status?.conditions?.map((c) => [c.type, c.reason, c.message])).toEqual([
      ["FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"],
      ["Failed", "DeadlineExceeded", "Job was active longer than specified deadline"],
    ]);
    expect(failed.status).toMatchObject({ failed: 2, ready: 0, terminating: 0 });
    expect(failed.status?.active).toBeUndefined();
    // Unscheduled Pods go at once once their finalizer is removed.
    await eventually(
      async () => (await env.client.list(POD, { namespace: ns })).items.length === 0,
      "Pods gone",
    );
    const events = await eventsOf(ns, "slow");
    expect(events.filter((e) => e.reason === "SuccessfulDelete")).toHaveLength(2);
  });

  it("suspends and resumes a Job", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(
      job(ns, "later", { suspend: true, parallelism: 2, completions: 2 }),
    );
    const suspended = await until(ns, "later", "Suspended", (s) =>
      (s.conditions ?? []).some((c) => c.type === "Suspended"),
    );
    expect(condition(suspended, "Suspended")).toMatchObject({
      status: "True",
      reason: "JobSuspended",
      message: "Job suspended",
    });
    expect(suspended.status?.startTime).toBeUndefined();
    expect(await jobPods(env.client, created)).toHaveLength(0);
    await env.client.patch(JOB, "later", ns, { spec: { suspend: false } }, { type: "merge" });
    const resumed = await until(ns, "later", "resumed", (s) => s.active === 2);
    expect(condition(resumed, "Suspended")).toMatchObject({
      status: "False",
      reason: "JobResumed",
      message: "Job resumed",
    });
    expect(resumed.status?.startTime).toMatch(RFC3339);
    // Suspending again deletes the running Pods without counting them failed.
    await env.client.patch(JOB, "later", ns, { spec: { suspend: true } }, { type: "merge" });
    const again = await until(
      ns,
      "later",
      "suspended again",
      (s) =>
        condition({ ...JOB, metadata: {}, status: s }, "Suspended")?.status === "True" && !s.active,
    );
    expect(again.status?.failed).toBeUndefined();
    await eventually(
      async () => (await env.client.list(POD, { namespace: ns })).items.length === 0,
      "Pods gone",
    );
    const reasons = (await eventsOf(ns, "later")).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(["Suspended", "Resumed", "SuccessfulDelete"]));
  });

  it("frees the Pods of a Job deleted with propagationPolicy Orphan from the tracking finalizer", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(job(ns, "left"));
    const pod = await eventually(async () => (await runningPods(env.client, created))[0], "a Pod");
    expect(pod.metadata.finalizers).toEqual([FINALIZER]);
    await env.client.delete(JOB, "left", ns, { propagationPolicy: "Orphan" });
    const freed = await eventually(async () => {
      const p = await env.client.get<Pod>(POD, pod.metadata.name ?? "", ns);
      return !p.metadata.ownerReferences && !p.metadata.finalizers ? p : undefined;
    }, "Pod orphaned and freed");
    expect(freed.metadata.finalizers).toBeUndefined();
  });

  it("deletes a finished Job after ttlSecondsAfterFinished, with its Pods", async () => {
    const ns = await freshNamespace(env.client);
    const created = await env.client.create(job(ns, "brief", { ttlSecondsAfterFinished: 1 }));
    await succeedPods(created, 1);
    const done = await until(ns, "brief", "Complete", (s) => s.completionTime !== undefined);
    const finishedAt = Date.parse(done.status?.completionTime ?? "");
    await eventually(
      async () => (await find(env.client, JOB, "brief", ns)) === undefined,
      "Job deleted",
    );
    expect(Date.now()).toBeGreaterThanOrEqual(finishedAt + 1000);
    await eventually(
      async () => (await env.client.list(POD, { namespace: ns })).items.length === 0,
      "Pods deleted",
    );
  });
});

describe("job controller parts", () => {
  it("writes completed indexes as Kubernetes does", () => {
    expect(formatIndexes(withIndexes([], [0, 1, 2, 4, 5, 7]))).toBe("0-2,4,5,7");
    expect(formatIndexes(withIndexes(parseIndexes("0-2,7", 10), [3, 8]))).toBe("0-3,7,8");
    expect(parseIndexes("1,3-5,x,9-12", 10)).toEqual([
      { first: 1, last: 1 },
      { first: 3, last: 5 },
      { first: 9, last: 9 },
    ]);
    const pod = (ix: number): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { annotations: { "batch.kubernetes.io/job-completion-index": String(ix) } },
    });
    expect(firstPendingIndexes([pod(1)], parseIndexes("0,3", 6), 3, 6)).toEqual([2, 4, 5]);
    expect(podGenerateName("a".repeat(63), 12)).toBe(`${"a".repeat(54)}-12-`);
  });

  it("doubles the Pod failure backoff from 10 s up to 10 min, and resets it on success", () => {
    const store = new BackoffStore();
    const failedAt = (ms: number): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { creationTimestamp: new Date(0).toISOString() },
      status: {
        phase: "Failed",
        conditions: [
          { type: "Ready", status: "False", lastTransitionTime: new Date(ms).toISOString() },
        ],
      },
    });
    const t0 = 1_700_000_000_000;
    let r = store.next("ns/j", [], [failedAt(t0)]);
    expect(remainingBackoffMs(r, t0)).toBe(10_000);
    expect(remainingBackoffMs(r, t0 + 4_000)).toBe(6_000);
    store.update("ns/j", r);
    r = store.next("ns/j", [], [failedAt(t0 + 1000), failedAt(t0 + 2000)]);
    expect(r.failuresAfterLastSuccess).toBe(3);
    expect(remainingBackoffMs(r, t0 + 2000)).toBe(40_000);
    expect(remainingBackoffMs({ failuresAfterLastSuccess: 12, lastFailureAt: t0 }, t0)).toBe(
      600_000,
    );
    store.update("ns/j", r);
    // A success after the failures resets the count; failures after it count again.
    const ok: Pod = {
      ...failedAt(t0 + 3000),
      status: { ...failedAt(t0 + 3000).status, phase: "Succeeded" },
    };
    r = store.next("ns/j", [ok], [failedAt(t0 + 2500), failedAt(t0 + 4000)]);
    expect(r).toEqual({ failuresAfterLastSuccess: 1, lastFailureAt: t0 + 4000 });
  });
});
