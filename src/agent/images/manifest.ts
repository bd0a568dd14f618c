/**
 * An image's manifest, `setpoint-image.json` at the root of the directory it is
 * built from: what a process started from the image runs (`entrypoint` and `cmd`,
 * as Kubernetes' `command` and `args` override them), its environment and its
 * working directory (relative to the image root; the root by default).
 */

export const MANIFEST_FILE = "setpoint-image.json";

export interface ImageManifest {
  entrypoint?: string[];
  cmd?: string[];
  env?: Record<string, string>;
  workingDir?: string;
}

function strings(v: unknown, field: string): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) {
    throw new Error(`${MANIFEST_FILE}: ${field} must be a list of strings`);
  }
  return v as string[];
}

/** Checks a parsed manifest and returns it in canonical form (fixed key order). */
export function parseManifest(raw: unknown): ImageManifest {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new Error(`${MANIFEST_FILE} must hold a JSON object`);
  }
  const m = raw as Record<string, unknown>;
  const out: ImageManifest = {};
  const entrypoint = strings(m.entrypoint, "entrypoint");
  const cmd = strings(m.cmd, "cmd");
  if (entrypoint) out.entrypoint = entrypoint;
  if (cmd) out.cmd = cmd;
  if (m.env !== undefined) {
    if (
      m.env === null ||
      typeof m.env !== "object" ||
      Object.values(m.env).some((v) => typeof v !== "string")
    ) {
      throw new Error(`${MANIFEST_FILE}: env must map names to strings`);
    }
    const env = m.env as Record<string, string>;
    out.env = Object.fromEntries(
      Object.keys(env)
        .sort()
        .map((k) => [k, env[k]]),
    );
  }
  if (m.workingDir !== undefined) {
    if (typeof m.workingDir !== "string") {
      throw new Error(`${MANIFEST_FILE}: workingDir must be a string`);
    }
    out.workingDir = m.workingDir;
  }
  if (!out.entrypoint?.length && !out.cmd?.length) {
    throw new Error(`${MANIFEST_FILE}: entrypoint or cmd must name what to run`);
  }
  return out;
}
