/**
 * The kubelet's atomic writer, for a volume's files: the payload goes into a new
 * timestamped directory (`..2026_12_05_16_30_00.123456789`), a `..data_tmp`
 * symbolic link to it is renamed over `..data` (one atomic step), and each
 * top-level name in the volume is a symbolic link through `..data`
 * (`key -> ..data/key`). A reader opening `DIR/key` sees either the old set or
 * the new one, never half of each. Then the links no longer in the payload and
 * the old data directory are removed. Nothing is written when the payload is what
 * is already there.
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, normalize } from "node:path";

/** One file of a payload: its content and mode. */
export interface PayloadFile {
  data: string | Buffer;
  mode: number;
}

const DATA_LINK = "..data";
const TMP_LINK = "..data_tmp";

/** A path of a payload: relative, no `..` element, not starting with `..`. */
export function validPayloadPath(p: string): boolean {
  if (!p || p.startsWith("/") || p.startsWith("..")) return false;
  return !p.split("/").some((part) => part === ".." || part === "");
}

function timestampDir(): string {
  const d = new Date();
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const nanos = `${pad(d.getUTCMilliseconds(), 3)}${String(process.hrtime()[1] % 1_000_000).padStart(6, "0")}`;
  return `..${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}.${nanos}`;
}

/** Whether `dir/..data` holds exactly `payload` (contents and modes). */
function sameAsCurrent(dir: string, payload: Map<string, PayloadFile>): boolean {
  let current: string;
  try {
    current = readlinkSync(join(dir, DATA_LINK));
  } catch {
    return false;
  }
  const base = join(dir, current);
  const listed: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(base, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p);
      else listed.push(p);
    }
  };
  try {
    walk("");
  } catch {
    return false;
  }
  if (listed.length !== payload.size) return false;
  for (const [p, f] of payload) {
    try {
      const full = join(base, p);
      if ((statSync(full).mode & 0o7777) !== f.mode) return false;
      if (!readFileSync(full).equals(Buffer.from(f.data))) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Makes `dir` hold `payload` (paths relative to it), atomically; true when it
 * wrote, false when the files were already so.
 */
export function writePayload(dir: string, payload: Map<string, PayloadFile>): boolean {
  for (const p of payload.keys()) {
    if (!validPayloadPath(p)) throw new Error(`invalid path ${JSON.stringify(p)}`);
  }
  mkdirSync(dir, { recursive: true });
  if (sameAsCurrent(dir, payload)) return false;
  let old: string | undefined;
  try {
    old = readlinkSync(join(dir, DATA_LINK));
  } catch {}
  const ts = timestampDir();
  const tsPath = join(dir, ts);
  mkdirSync(tsPath, { mode: 0o755 });
  for (const [p, f] of payload) {
    const full = join(tsPath, normalize(p));
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    writeFileSync(full, f.data);
    chmodSync(full, f.mode);
  }
  rmSync(join(dir, TMP_LINK), { force: true });
  symlinkSync(ts, join(dir, TMP_LINK));
  renameSync(join(dir, TMP_LINK), join(dir, DATA_LINK));
  const top = new Set([...payload.keys()].map((p) => p.split("/")[0]));
  for (const name of top) {
    const link = join(dir, name);
    try {
      if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === join(DATA_LINK, name)) {
        continue;
      }
      rmSync(link, { recursive: true, force: true });
    } catch {}
    symlinkSync(join(DATA_LINK, name), link);
  }
  for (const name of readdirSync(dir)) {
    if (name.startsWith("..") || top.has(name)) continue;
    rmSync(join(dir, name), { recursive: true, force: true });
  }
  if (old && old !== ts) rmSync(join(dir, old), { recursive: true, force: true });
  return true;
}
