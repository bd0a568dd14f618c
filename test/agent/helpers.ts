/**
 * Helpers of the agent tests: temporary directories removed after each test,
 * an image store holding the shipped demo images and a shell image, and a
 * poll-until helper.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ImageStore, importBuiltinImages } from "../../src/agent/images/index.ts";

const dirs: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
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
