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
  type PodRecord,
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

/** A Pod `p` whose only container `c` ran once and ended; its log's path (the folder made). */
function endedRun(prefix: string): { dataDir: string; record: PodRecord; path: string } {
  const dataDir = tempDir(prefix);
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
  return { dataDir, record, path };
}

/** Serves one log request for the Pod's only container over real HTTP; the answer's text. */
async function serveOnce(
  dataDir: string,
  record: PodRecord,
  query: string,
  now?: number,
): Promise<string> {
  const server = createServer((_req, res) => {
    serveContainerLog(
      res,
      dataDir,
      record,
      "c",
      logOptions(new URLSearchParams(query), now),
      () => record.containers[0],
    ).catch((err) => {
      res.statusCode = (err as LogRequestError).code ?? 500;
      res.end(String(err));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return res.text();
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

  it("reads timestamps, sinceSeconds and sinceTime", () => {
    const now = Date.parse("2026-01-01T00:01:00Z");
    expect(logOptions(new URLSearchParams("timestamps=true&sinceSeconds=10"), now)).toEqual({
      follow: false,
      previous: false,
      timestamps: true,
      sinceNs: BigInt(now - 10_000) * 1_000_000n,
    });
    expect(logOptions(new URLSearchParams("sinceTime=2026-01-01T00:00:30Z"), now).sinceNs).toBe(
      BigInt(Date.parse("2026-01-01T00:00:30Z")) * 1_000_000n,
    );
    expect(logOptions(new URLSearchParams("timestamps=false&tailLines=3"))).toEqual({
      follow: false,
      previous: false,
      tailLines: 3,
    });
  });
});

describe("reading a run's files written without the relay", () => {
  const { dataDir, record, path } = endedRun("setpoint-container-logs-");
  writeFileSync(`${path}.2`, "one\ntwo\n");
  writeFileSync(`${path}.1`, "three\nfour\n");
  writeFileSync(path, "five\nsix");

  const read = (query: string) => serveOnce(dataDir, record, query);

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

  it("refuses timestamps and since for them, saying why", async () => {
    for (const q of ["timestamps=true", "sinceSeconds=10", "sinceTime=2026-01-01T00:00:00Z"]) {
      expect(await read(q)).toMatch(
        /written without the log relay and does not record when each line was written/,
      );
    }
  });
});

describe("reading a run's files in the CRI format", () => {
  const { dataDir, record, path } = endedRun("setpoint-container-logs-cri-");
  writeFileSync(
    `${path}.1`,
    "2026-01-01T00:00:01.5Z stdout F one\n2026-01-01T00:00:02Z stderr F two\n",
  );
  writeFileSync(
    path,
    [
      "2026-01-01T00:00:03.000000001Z stdout P thr",
      "2026-01-01T00:00:03.000000002Z stdout F ee",
      "2026-01-01T00:00:04.25Z stdout F four",
      "",
    ].join("\n"),
  );

  const read = (query: string) =>
    serveOnce(dataDir, record, query, Date.parse("2026-01-01T00:00:06Z"));

  it("gives each record's line, a partial one joined to the next", async () => {
    expect(await read("")).toBe("one\ntwo\nthree\nfour\n");
  });

  it("prefixes each line with its time as the kubelet writes it (nine digits)", async () => {
    expect(await read("timestamps=true&tailLines=3")).toBe(
      [
        "2026-01-01T00:00:03.000000001Z thr2026-01-01T00:00:03.000000002Z ee",
        "2026-01-01T00:00:04.250000000Z four",
        "",
      ].join("\n"),
    );
  });

  it("skips records before sinceSeconds or sinceTime; tail counts records; limitBytes counts what is sent", async () => {
    expect(await read("sinceSeconds=3")).toBe("three\nfour\n");
    expect(await read("sinceTime=2026-01-01T00:00:02Z")).toBe("two\nthree\nfour\n");
    expect(await read("tailLines=3&sinceTime=2026-01-01T00:00:04Z")).toBe("four\n");
    expect(await read("timestamps=true&limitBytes=37")).toBe(
      "2026-01-01T00:00:01.500000000Z one\n20",
    );
  });
});
