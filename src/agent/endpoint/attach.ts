/**
 * `kubectl attach` on the agent (the kubelet's /attach/NS/NAME/CONTAINER): the
 * running container's output and, for a container with `stdin: true`, its input,
 * over a WebSocket in the channel protocol exec speaks (exec.ts). A container's
 * output reaches only its log file (through the log relay, so it keeps running
 * while the agent is down), so what attach streams is the log as `kubectl logs -f
 * --tail=0` reads it (container-logs.ts): each line written from the moment of
 * attaching on, each on its stream's channel (with `-t`, where kubectl asks for
 * no stderr, all on stdout's; a run's raw file from before the log relay, on
 * stdout's).
 * Input goes to the container's stdin pipe (pods/stdin.ts); the client's end of
 * input ends only this attach's writing, as the kubelet leaves a stdin open that
 * is not `stdinOnce`. The attach ends when the container's run ends (a Success
 * Status on the error channel, as the kubelet sends it) or the client goes; the
 * container is not touched by either.
 *
 * With `-t`, kubectl puts its own terminal in raw mode and sends resizes; the
 * container has no terminal here (its stdin is a pipe), so resizes are ignored.
 */
import type { Socket } from "node:net";
import type { WebSocket } from "ws";
import {
  type ContainerRecord,
  containerOf,
  containerStdinPath,
  type PodRecord,
  podLogDir,
  writeContainerStdin,
} from "../pods/index.ts";
import { streamContainerLog } from "./container-logs.ts";
import { CLOSE, ERROR, EXEC_PROTOCOLS, STDERR, STDIN, STDOUT, statusMessage } from "./exec.ts";

export interface AttachSpec {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface AttachTarget {
  dataDir: string;
  record: PodRecord;
  container: string;
  /** The container's record as it is now. */
  current(): ContainerRecord | undefined;
  /** The container's stdin pipe, when it has one. */
  stdinPath?: string;
}

/**
 * What an attach to `container` of `record` reads and writes, in the agent's
 * `dataDir`; undefined when the container does not run. `pod` reads the Pod's
 * record as it is now (the attach ends when the run it joined is over).
 */
export function attachTarget(
  dataDir: string,
  record: PodRecord,
  container: string,
  pod: () => PodRecord | undefined,
): AttachTarget | undefined {
  if (!containerOf(record, container)?.process) return undefined;
  const meta = record.pod.metadata;
  const podDir = podLogDir(dataDir, meta.namespace ?? "default", meta.name ?? "", record.uid);
  const spec = [...(record.pod.spec?.initContainers ?? []), ...(record.pod.spec?.containers ?? [])];
  const withStdin = spec.find((c) => c.name === container)?.stdin === true;
  return {
    dataDir,
    record,
    container,
    current: () => containerOf(pod(), container),
    ...(withStdin ? { stdinPath: containerStdinPath(podDir, container) } : {}),
  };
}

/** Runs an attach for the connection `ws` (whose protocol was agreed) until the run ends or the client goes. */
export function runAttach(ws: WebSocket, spec: AttachSpec, target: AttachTarget): void {
  const v5 = ws.protocol === EXEC_PROTOCOLS[0];
  let gone = false;
  const send = (channel: number, data: Buffer) =>
    new Promise<boolean>((done) => {
      if (ws.readyState !== ws.OPEN) {
        done(false);
        return;
      }
      ws.send(Buffer.concat([Buffer.of(channel), data]), { binary: true }, (err) => done(!err));
    });

  let stdin: Socket | undefined;
  if (spec.stdin && target.stdinPath) {
    stdin = writeContainerStdin(target.stdinPath);
    stdin?.on("error", () => {});
  }
  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (!isBinary || data.length === 0) return;
    const channel = data[0];
    if (channel === STDIN && stdin && !stdin.writableEnded) {
      if (!stdin.write(data.subarray(1))) {
        ws.pause();
        stdin.once("drain", () => ws.resume());
      }
    } else if (channel === CLOSE && v5 && data[1] === STDIN) {
      stdin?.end();
    }
  });
  ws.once("close", () => {
    gone = true;
    stdin?.destroy();
  });
  ws.on("error", () => ws.terminate());

  // Each stream's lines on its channel (a raw file's on stdout's); with a terminal no
  // stderr is asked for, and stderr's lines go to stdout's channel with the rest.
  const channelOf = (stream?: "stdout" | "stderr"): number | undefined => {
    if (stream === "stderr" && spec.stderr) return STDERR;
    if (spec.stdout) return STDOUT;
    return stream === undefined && spec.stderr ? STDERR : undefined;
  };
  const sink = {
    write: (chunk: Buffer, stream?: "stdout" | "stderr") => {
      const channel = channelOf(stream);
      return channel === undefined ? Promise.resolve(true) : send(channel, chunk);
    },
    gone: () => gone,
  };
  // What the run writes from now on, until it ends.
  const opts = { follow: true, previous: false, tailLines: 0 };
  void streamContainerLog(
    target.dataDir,
    target.record,
    target.container,
    opts,
    target.current,
    () => sink,
  )
    .catch(() => undefined)
    .then(async () => {
      if (gone) return;
      await send(ERROR, statusMessage({ status: "Success" }));
      if (ws.readyState === ws.OPEN) ws.close(1000);
    });
}
