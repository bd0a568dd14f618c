/**
 * Helpers of the agent tests: temporary directories removed after each test,
 * an image store holding the shipped demo images and a shell image, and a
 * poll-until helper.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ImageStore, importBuiltinImages } from "../../src/agent/images/index.ts";
import { LOG_RELAY_DATA_DIR_ENV } from "../../src/agent/log-relay/index.ts";
import { PROXY_DATA_DIR_ENV } from "../../src/agent/proxy-process.ts";

const dirs: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** The temporary directories made by this test file and not yet removed. */
export function currentTempDirs(): readonly string[] {
  return [...dirs];
}

/**
 * Removes the temporary directories, after SIGKILLing any service proxy or log
 * relay process an agent left running on one of them (a test that stopped its
 * agents with their Pods has none left; this is the net under a test that failed).
 */
export function removeTempDirs(): void {
  const gone = dirs.splice(0);
  for (const pid of helperProcesses(gone)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
  for (const d of gone) rmSync(d, { recursive: true, force: true });
}

/** Pids of the live service proxy processes whose data directory is (under) one of `under` (any, if not given). */
export function serviceProxyProcesses(under?: readonly string[]): number[] {
  return processesWithDataDir(PROXY_DATA_DIR_ENV, under);
}

/** Pids of the live log relay processes whose data directory is (under) one of `under` (any, if not given). */
export function logRelayProcesses(under?: readonly string[]): number[] {
  return processesWithDataDir(LOG_RELAY_DATA_DIR_ENV, under);
}

/** Pids of the agents' helpers (service proxies and log relays) on `under`. */
export function helperProcesses(under?: readonly string[]): number[] {
  return [...serviceProxyProcesses(under), ...logRelayProcesses(under)];
}

function processesWithDataDir(envVar: string, under?: readonly string[]): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0])) continue;
      const dir = readFileSync(`/proc/${name}/environ`, "utf8")
        .split("\0")
        .find((v) => v.startsWith(`${envVar}=`))
        ?.slice(envVar.length + 1);
      if (dir && (!under || under.some((u) => dir === u || dir.startsWith(`${u}/`)))) {
        out.push(Number(name));
      }
    } catch {}
  }
  return out.sort((a, b) => a - b);
}

/** A store with hello:* and `shell:1` (runs `sh -c "$CMD"` unless the Pod gives a command). */
export function testImageStore(root = tempDir("setpoint-agent-images-")): ImageStore {
  const store = new ImageStore(root);
  importBuiltinImages(store);
  const shell = join(root, "..", `shell-src-${Math.random().toString(36).slice(2)}`);
  mkdirSync(shell, { recursive: true });
  dirs.push(shell);
  writeFileSync(
    join(shell, "setpoint-image.json"),
    JSON.stringify({ entrypoint: ["sh", "-c"], cmd: ["echo shell"], env: { FROM_IMAGE: "yes" } }),
  );
  store.build(shell, ["shell:1"]);
  return store;
}

/** Polls `fn` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** GETs http://host:port/path with a short timeout; undefined on any failure. */
export async function httpText(url: string, timeoutMs = 1_000): Promise<string | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return await res.text();
  } catch {
    return undefined;
  }
}
