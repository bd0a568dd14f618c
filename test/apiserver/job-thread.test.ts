/**
 * The worker thread that runs jobs for the event loop (src/apiserver/wire/job-thread.ts):
 * answers by id, one thread for many jobs, and code as a bundler leaves it (the
 * `setpoint` command is an ES module bundle, whose `require` calls are `__require`).
 */
import { describe, expect, it } from "vitest";
import { JobThread } from "../../src/apiserver/wire/job-thread.ts";

/** The helpers an ES module bundle's code calls (defined in the bundle, not in the thread). */
declare const __require: NodeJS.Require;
declare const __name: <T>(f: T, name: string) => T;

/** Doubles `n`, and says which thread did (its code written as a bundler writes it). */
function bundledMain(factor: number): void {
  const threads = __require("node:worker_threads") as typeof import("node:worker_threads");
  const double = __name((n: number) => n * factor, "double");
  threads.parentPort?.on("message", (m: { id: number; n: number }) => {
    threads.parentPort?.postMessage({ id: m.id, n: double(m.n), thread: threads.threadId });
  });
}

describe("JobThread", () => {
  it("runs jobs on one thread of its own, each answered by its id, from bundled code", async () => {
    const jobs = new JobThread<{ n: number }, { n: number; thread: number }>(
      "setpoint-test",
      bundledMain,
      2,
    );
    const answers = await Promise.all([1, 2, 3, 4].map((n) => jobs.run({ n })));
    expect(answers.map((a) => a.n)).toEqual([2, 4, 6, 8]);
    const threads = new Set(answers.map((a) => a.thread));
    expect(threads.size).toBe(1);
    expect([...threads][0]).toBeGreaterThan(0);
    // The answer is the thread's message without the id it was matched by.
    expect(Object.keys(answers[0]).sort()).toEqual(["n", "thread"]);
    expect((await jobs.run({ n: 5 })).thread).toBe([...threads][0]);
  });

  it("fails the pending jobs when its code throws, and starts a new thread for the next", async () => {
    const jobs = new JobThread<{ n: number }, { n: number }>(
      "setpoint-test",
      (limit: number) => {
        const threads = require("node:worker_threads") as typeof import("node:worker_threads");
        threads.parentPort?.on("message", (m: { id: number; n: number }) => {
          if (m.n > limit) throw new Error(`too big: ${m.n}`);
          threads.parentPort?.postMessage({ id: m.id, n: m.n });
        });
      },
      10,
    );
    await expect(jobs.run({ n: 11 })).rejects.toThrow("too big: 11");
    expect(await jobs.run({ n: 3 })).toEqual({ n: 3 });
  });
});
