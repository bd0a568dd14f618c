/**
 * Jobs on (simulated) nodes: the scheduler binds the Job's Pods, simulated
 * nodes run them to Succeeded, and the job controller counts them; a Job
 * past activeDeadlineSeconds has its bound Pods deleted gracefully, and
 * becomes Failed only once the nodes have ended them and their tracking
 * finalizers are gone.
 */
import type { Job, Pod } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startSimulatedNodes } from "../../helpers/simulated-nodes.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually } from "../helpers.ts";

const env = startForFile(() =>
  startTestEnv({ controllers: ["garbage-collector", "scheduler", "job"] }),
);
startForFile(() => startSimulatedNodes(env.client, 2, { runMs: 2_500 }));

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

function job(ns: string, name: string, spec: Partial<NonNullable<Job["spec"]>>): Job {
  return {
    ...JOB,
    metadata: { name, namespace: ns },
    spec: {
      template: {
        spec: { containers: [{ name: "c", image: "busybox:1.36" }], restartPolicy: "Never" },
      },
      ...spec,
    },
  };
}

async function finished(ns: string, name: string, type: string): Promise<Job> {
  return eventually(
    async () => {
      const j = await env.client.get<Job>(JOB, name, ns);
      return j.status?.conditions?.some((c) => c.type === type && c.status === "True")
        ? j
        : undefined;
    },
    type,
    30_000,
  );
}

describe("Jobs on simulated nodes", () => {
  it("runs to completion: Pods bound by the scheduler, run by the nodes, counted once", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create(job(ns, "batch", { completions: 4, parallelism: 2 }));
    const done = await finished(ns, "batch", "Complete");
    expect(done.status).toMatchObject({ succeeded: 4, ready: 0, terminating: 0 });
    expect(done.status?.failed).toBeUndefined();
    const pods = (await env.client.list<Pod>(POD, { namespace: ns })).items;
    expect(pods).toHaveLength(4);
    for (const p of pods) {
      expect(p.spec?.nodeName).toBeTruthy();
      expect(p.status?.phase).toBe("Succeeded");
      expect(p.metadata.finalizers ?? []).toEqual([]);
    }
  });

  it("fails a Job past its deadline once the nodes have ended its Pods", async () => {
    const ns = await freshNamespace(env.client);
    await env.client.create(
      job(ns, "late", { completions: 2, parallelism: 2, activeDeadlineSeconds: 1 }),
    );
    const failed = await finished(ns, "late", "Failed");
    expect(failed.status?.conditions?.map((c) => [c.type, c.reason])).toEqual([
      ["FailureTarget", "DeadlineExceeded"],
      ["Failed", "DeadlineExceeded"],
    ]);
    expect(failed.status).toMatchObject({ failed: 2, terminating: 0, uncountedTerminatedPods: {} });
    await eventually(
      async () => (await env.client.list(POD, { namespace: ns })).items.length === 0,
      "Pods gone",
    );
  });
});
