/**
 * What kubectl users do with Jobs, with the real kubectl against a real
 * apiserver running the job, ttl-after-finished and garbage-collector
 * controllers: apply, create job, `kubectl wait --for=condition=complete`
 * (and `failed`), the columns of `kubectl get jobs` (STATUS, COMPLETIONS,
 * DURATION, AGE as kubectl 1.32 prints them), and delete cascading to the
 * Pods. The test plays the kubelet (job-pods.ts).
 */
import type { Job, Pod } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";
import { eventually } from "../helpers.ts";
import { finishPod, runningPods } from "./job-pods.ts";

const env = startForFile(() =>
  startTestEnv({ controllers: ["garbage-collector", "job", "ttl-after-finished"] }),
);

const JOB = { apiVersion: "batch/v1", kind: "Job" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;

const PI_YAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl", "-Mbignum=bpi", "-wle", "print bpi(200)"]
`;

/** kubectl's age and duration cells: "5s", "2m3s", ... */
const SPAN = "\\d+(?:s|m\\d*s?|h\\d*m?)";

describe("kubectl with Jobs", () => {
  let k: Kubectl;
  let ns: string;

  beforeAll(async () => {
    k = new Kubectl(env.kubeconfigPath);
    ns = await freshNamespace(env.client);
  });
  afterAll(async () => {
    await k?.close();
  });

  const kubectl = (args: string[], input?: string) =>
    k.ok([...args, "-n", ns], input === undefined ? {} : { input });
  const job = (name: string) => env.client.get<Job>(JOB, name, ns);

  /** Ends each Pod of the Job as it appears, `n` in all. */
  async function finishAll(name: string, phase: "Succeeded" | "Failed", n: number) {
    const j = await job(name);
    const done = new Set<string>();
    await eventually(async () => {
      for (const p of await runningPods(env.client, j)) {
        if (done.size >= n || done.has(p.metadata.uid ?? "")) continue;
        await finishPod(env.client, p, phase, 60_000);
        done.add(p.metadata.uid ?? "");
      }
      return done.size >= n;
    }, `${n} Pods ${phase}`);
  }

  it("applies a Job, shows it Running, and `kubectl wait --for=condition=complete` returns once it completes", async () => {
    expect(await kubectl(["apply", "-f", "-"], PI_YAML)).toBe("job.batch/pi created\n");
    await eventually(async () => (await job("pi")).status?.active === 1, "1 active");
    const running = await kubectl(["get", "jobs"]);
    const [header, row] = running.trimEnd().split("\n");
    expect(header).toMatch(/^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE$/);
    expect(row).toMatch(new RegExp(`^pi\\s+Running\\s+0/2\\s+${SPAN}\\s+${SPAN}$`));

    const wait = k.start(["wait", "--for=condition=complete", "job/pi", "--timeout=60s", "-n", ns]);
    await finishAll("pi", "Succeeded", 2);
    const result = await wait.exited;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("job.batch/pi condition met\n");

    const [, done] = (await kubectl(["get", "jobs"])).trimEnd().split("\n");
    expect(done).toMatch(new RegExp(`^pi\\s+Complete\\s+2/2\\s+${SPAN}\\s+${SPAN}$`));
    // -o wide adds the template's containers, images and the selector.
    const wide = (await kubectl(["get", "job", "pi", "-o", "wide"])).trimEnd().split("\n");
    expect(wide[0]).toMatch(
      /^NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR$/,
    );
    const uid = (await job("pi")).metadata.uid;
    expect(wide[1]).toMatch(
      new RegExp(`\\spi\\s+perl:5\\.34\\.0\\s+batch\\.kubernetes\\.io/controller-uid=${uid}$`),
    );
  });

  it("waits for condition=failed on a Job past its backoffLimit, shown Failed", async () => {
    await kubectl(
      ["apply", "-f", "-"],
      PI_YAML.replace("name: pi\n", "name: broken\n").replace(
        "completions: 2\n",
        "completions: 1\n  backoffLimit: 0\n",
      ),
    );
    const wait = k.start([
      "wait",
      "--for=condition=failed",
      "job/broken",
      "--timeout=60s",
      "-n",
      ns,
    ]);
    await finishAll("broken", "Failed", 1);
    const result = await wait.exited;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("job.batch/broken condition met\n");
    const line = (await kubectl(["get", "job", "broken"])).trimEnd().split("\n")[1];
    expect(line).toMatch(new RegExp(`^broken\\s+Failed\\s+0/1\\s+${SPAN}\\s+${SPAN}$`));
  });

  it("creates a Job with kubectl create job", async () => {
    expect(
      // The namespace goes before "--": what follows is the container's command.
      await k.ok(["create", "job", "made", "-n", ns, "--image=busybox:1.36", "--", "echo", "hi"]),
    ).toBe("job.batch/made created\n");
    const made = await job("made");
    expect(made.spec?.template.spec?.restartPolicy).toBe("Never");
    expect(made.spec?.template.spec?.containers[0]).toMatchObject({
      name: "made",
      image: "busybox:1.36",
      command: ["echo", "hi"],
    });
    await finishAll("made", "Succeeded", 1);
    expect(await kubectl(["wait", "--for=condition=complete", "job/made", "--timeout=30s"])).toBe(
      "job.batch/made condition met\n",
    );
  });

  it("deletes a Job and, with it, its Pods", async () => {
    expect(await kubectl(["delete", "job", "pi"])).toBe('job.batch "pi" deleted\n');
    await eventually(async () => {
      const pods = await env.client.list<Pod>(POD, {
        namespace: ns,
        labelSelector: "batch.kubernetes.io/job-name=pi",
      });
      return pods.items.length === 0;
    }, "pi's Pods collected");
  });
});
