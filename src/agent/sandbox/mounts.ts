/**
 * Mount points on the host for isolated containers' volumes. The process's root
 * file system is the host's, so a mountPath needs a directory (or, for a file, an
 * empty file) there to be mounted on. One that is missing is made, empty; the
 * volume's files are mounted on it only inside the container's mount namespace,
 * so the host never sees them. What was made is kept in the Pod's record and
 * removed with the Pod, unless another Pod of the agent still uses it.
 */
import {
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  rmdirSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { dirname } from "node:path";
import type { BindMount } from "./wrapper.ts";

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Makes the mount points missing on the host; returns those made (each made path, parents first). */
export function makeMountPoints(mounts: BindMount[]): string[] {
  const made: string[] = [];
  for (const m of mounts) {
    const missing: string[] = [];
    for (let p = dirname(m.target); !exists(p); p = dirname(p)) missing.unshift(p);
    for (const p of missing) {
      mkdirSync(p, { mode: 0o755 });
      made.push(p);
    }
    if (exists(m.target)) continue;
    if (statSync(m.source).isDirectory()) mkdirSync(m.target, { mode: 0o755 });
    else closeSync(openSync(m.target, "wx", 0o644));
    made.push(m.target);
  }
  return made;
}

/** Whether the mount point `p` is `target` or one of its parents. */
export function holds(p: string, target: string): boolean {
  return target === p || target.startsWith(`${p}/`);
}

/**
 * Removes the mount points made (deepest first) that none of `used` is or lies
 * under, if still empty; returns those kept because they are used.
 */
export function removeMountPoints(made: string[], used: string[]): string[] {
  const kept: string[] = [];
  for (const p of [...made].sort((a, b) => b.length - a.length)) {
    if (used.some((u) => holds(p, u))) {
      kept.push(p);
      continue;
    }
    try {
      if (lstatSync(p).isDirectory()) rmdirSync(p);
      else if (statSync(p).size === 0) unlinkSync(p);
    } catch {}
  }
  return kept;
}
