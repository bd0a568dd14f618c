/**
 * Processes as the agent knows them: a pid plus its start time, read from
 * /proc/PID/stat (field 22, clock ticks since boot), so a pid the kernel reused
 * for another process is never mistaken for a container's. Each container runs
 * as the leader of its own process group, so signals go to the group (the
 * process and everything it started).
 */
import { readdirSync, readFileSync } from "node:fs";

/** A process the agent started: pid, and its start time in clock ticks since boot. */
export interface ProcessIdentity {
  pid: number;
  startTicks: number;
}

/** The start time (ticks since boot) of a live process, or undefined (gone or a zombie). */
export function processStartTicks(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after it.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (fields[0] === "Z" || fields[0] === "X") return undefined;
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  const ticks = Number(fields[19]);
  return Number.isFinite(ticks) ? ticks : undefined;
}

/** Whether the process is still the one the agent started. */
export function isAlive(p: ProcessIdentity): boolean {
  return processStartTicks(p.pid) === p.startTicks;
}

/** Sends `signal` to the process group led by `pid`; false when there is none. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The live processes (zombies left out) in the process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is the state, fields[2] the process group.
    if (fields[0] !== "Z" && fields[0] !== "X" && Number(fields[2]) === pgid)
      out.push(Number(name));
  }
  return out;
}

/** Whether any live process is left in the group led by `pid`. */
export function groupExists(pid: number): boolean {
  return groupMembers(pid).length > 0;
}
