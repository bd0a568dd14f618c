/**
 * The agent's reading of container logs (src/agent/endpoint/container-logs.ts),
 * over a real HTTP response: a run's rotated copies are read before its file,
 * `tailLines` reaches back into them, `limitBytes` cuts, and which run answers
 * (and the kubelet's refusals) follows the container's record.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import type { Pod } from "@setpoint/api";
import { afterAll, describe, expect, it } from "vitest";
import {
  type LogRequestError,
  logOptions,
  serveContainerLog,
} from "../../src/agent/endpoint/container-logs.ts";
import { logRun } from "../../src/agent/endpoint/index.ts";
import {
  type ContainerRecord,
  containerLogPath,
  newPodRecord,
  podLogDir,
} from "../../src/agent/pods/index.ts";
import { removeTempDirs, tempDir } from "./helpers.ts";

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  removeTempDirs();
});

const terminated = {
  exitCode: 1,
  reason: "Error",
  startedAt: "2026-01-01T00:00:00Z",
  finishedAt: "2026-01-01T00:00:01Z",
  containerID: "setpoint://1-1",
};

function rec(over: Partial<ContainerRecord>): ContainerRecord {
  return { name: "c", restartCount: 0, ready: false, started: false, done: false, ...over };
}

const running = { pid: 1, startTicks: 1, startedAt: "", containerID: "x", imageID: "", image: "" };

describe("which run answers", () => {
  it("is the current run, or the one before with previous", () => {
    expect(logRun(rec({ process: running, restartCount: 2, terminated }), "p", false)).toBe(2);
    expect(logRun(rec({ process: running, restartCount: 2, terminated }), "p", true)).toBe(1);
    // Back-off after a crash: both are the run that ended.
    const backoff = rec({ restartCount: 1, terminated, waiting: { reason: "CrashLoopBackOff" } });
    expect(logRun(backoff, "p", false)).toBe(1);
    expect(logRun(backoff, "p", true)).toBe(1);
  });

  it("refuses as the kubelet words it", () => {
    const words = (r: ContainerRecord, previous = false) => {
      try {
        logRun(r, "p", previous);
      } catch (err) {
        return (err as LogRequestError).message;
      }
      return "";
    };
    expect(words(rec({ process: running }), true)).toBe(
      'previous terminated container "c" in pod "p" not found',
    );
    expect(words(rec({ waiting: { reason: "ErrImagePull" } }))).toBe(
      `container "c" in pod "p" is waiting to start: image can't be pulled`,
    );
    expect(words(rec({ waiting: { reason: "ImagePullBackOff" } }))).toBe(
      'container "c" in pod "p" is waiting to start: trying and failing to pull image',
    );
    expect(words(rec({ waiting: { reason: "ContainerCreating" } }))).toBe(
      'container "c" in pod "p" is waiting to start: ContainerCreating',
    );
    expect(words(rec({ terminated: { ...terminated, containerID: "" } }))).toBe(
      'container "c" in pod "p" is terminated',
    );
  });

  it("refuses timestamps and since, which the files cannot answer", () => {
    for (const q of ["timestamps=true", "sinceSeconds=10", "sinceTime=2026-01-01T00:00:00Z"]) {
      expect(() => logOptions(new URLSearchParams(q))).toThrow(/do not record when each line/);
    }
    expect(logOptions(new URLSearchParams("timestamps=false&tailLines=3"))).toEqual({
      follow: false,
      previous: false,
      tailLines: 3,
    });
  });
});

describe("reading a run's files", () => {
  const dataDir = tempDir("setpoint-container-logs-");
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "default", uid: "u1" },
    spec: { containers: [{ name: "c", image: "x" }] },
  } as Pod;
  const record = newPodRecord(pod, "127.0.0.1");
  record.containers[0] = rec({ restartCount: 0, terminated });
  const path = containerLogPath(podLogDir(dataDir, "default", "p", "u1"), "c", 0);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.2`, "one\ntwo\n");
  writeFileSync(`${path}.1`, "three\nfour\n");
  writeFileSync(path, "five\nsix");

  async function read(query: string): Promise<string> {
    const server = createServer((_req, res) => {
      serveContainerLog(
        res,
        dataDir,
        record,
        "c",
        logOptions(new URLSearchParams(query)),
        () => record.containers[0],
      ).catch((err) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return res.text();
  }

  it("reads the rotated copies oldest first, then the file", async () => {
    expect(await read("")).toBe("one\ntwo\nthree\nfour\nfive\nsix");
  });

  it("tails back into the rotated copies; a last line without newline counts", async () => {
    expect(await read("tailLines=1")).toBe("six");
    expect(await read("tailLines=3")).toBe("four\nfive\nsix");
    expect(await read("tailLines=5")).toBe("two\nthree\nfour\nfive\nsix");
    expect(await read("tailLines=100")).toBe("one\ntwo\nthree\nfour\nfive\nsix");
  });

  it("stops after limitBytes", async () => {
    expect(await read("limitBytes=10")).toBe("one\ntwo\nth");
    expect(await read("tailLines=2&limitBytes=3")).toBe("fiv");
  });
});
