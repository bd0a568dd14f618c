/**
 * Exact-once counting of a Job's finished Pods across a restart of the job
 * controller: the controller is stopped in the middle of counting (one Pod
 * recorded in uncountedTerminatedPods with its finalizer already removed, one
 * finished Pod not recorded at all, one still running), and a new controller
 * counts each of them once.
 */
import type { Job, Pod } from "@setpoint/api";
import { afterEach, describe, expect, it } from "vitest";
import type { ControllerManager } from "../../../src/controllers/index.ts";
import { BUILTIN_CONTROLLER_NAMES } from "../../../src/controllers/index.ts";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { sleep } from "../../helpers/poll.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually, startControllers } from "../helpers.ts";
import { finishPod, jobPods } from "./job-pods.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

let running: ControllerManager | undefined;
const startJobController = async () => {
  running = await startControllers({
    restConfig: env.config,
    disabled: BUILTIN_CONTROLLER_NAMES.filter((n) => n !== "job"),
  });
  return running;
};
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe("job controller restart", () => {
  it("counts each finished Pod once when it restarts in the middle of counting", async () => {
    const ns = await freshNamespace(env.client);
    const cm = await startJobController();
    const created = await env.client.create<Job>({
      ...JOB,
      metadata: { name: "count", namespace: ns },
      spec: {
        completions: 3,
        parallelism: 3,
        template: {
          spec: { containers: [{ name: "c", image: "busybox:1.36" }], restartPolicy: "Never" },
        },
      },
    });
    const [a, b, c] = await eventually(async () => {
      const p = await jobPods(env.client, created);
      return p.length === 3 ? p : undefined;
    }, "3 Pods");
    await eventually(
      async () => (await env.client.get<Job>(JOB, "count", ns)).status?.active === 3,
      "3 active",
    );
    await cm.stop();
    running = undefined;

    // As if the controller had died between removing a's finalizer and counting it.
    await finishPod(env.client, a as Pod, "Succeeded");
    await finishPod(env.client, b as Pod, "Succeeded");
    const job = await env.client.get<Job>(JOB, "count", ns);
    await env.client.updateStatus<Job>({
      ...job,
      status: { ...job.status, uncountedTerminatedPods: { succeeded: [a?.metadata.uid ?? ""] } },
    });
    await env.client.patch(
      POD,
      a?.metadata.name ?? "",
      ns,
      { metadata: { finalizers: null } },
      { type: "merge" },
    );

    await startJobController();
    const counted = await eventually(async () => {
      const j = await env.client.get<Job>(JOB, "count", ns);
      return j.status?.succeeded === 2 && j.status.active === 1 ? j : undefined;
    }, "a and b counted");
    expect(counted.status?.uncountedTerminatedPods).toEqual({});
    // Nothing counts twice, however often the Job is synced again.
    await env.client.patch(
      JOB,
      "count",
      ns,
      { metadata: { labels: { poke: "1" } } },
      { type: "merge" },
    );
    await sleep(1_000);
    expect((await env.client.get<Job>(JOB, "count", ns)).status?.succeeded).toBe(2);
    const bNow = await env.client.get<Pod>(POD, b?.metadata.name ?? "", ns);
    expect(bNow.metadata.finalizers).toBeUndefined();

    await finishPod(env.client, c as Pod, "Succeeded");
    const done = await eventually(async () => {
      const j = await env.client.get<Job>(JOB, "count", ns);
      return j.status?.completionTime ? j : undefined;
    }, "Complete");
    expect(done.status).toMatchObject({ succeeded: 3, uncountedTerminatedPods: {} });
    expect(done.status?.failed).toBeUndefined();
  });
});
