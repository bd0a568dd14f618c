/**
 * Completion indexes of an Indexed Job, as Kubernetes keeps them: a sorted
 * list of disjoint intervals, written to `status.completedIndexes` as
 * "1,3-5,7" (two neighbours are "3,4", three or more a range), and read back
 * ignoring what lies at or beyond `completions`.
 */
import type { Pod } from "@setpoint/api";

/** The annotation (and label) carrying a Pod's completion index. */
export const COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index";
/** The environment variable each container of an Indexed Job's Pods gets. */
export const COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX";

/** A closed interval of indexes. */
export interface Interval {
  first: number;
  last: number;
}

/** A Pod's completion index from its annotation; -1 when missing or invalid. */
export function completionIndex(p: Pod): number {
  const v = p.metadata.annotations?.[COMPLETION_INDEX_ANNOTATION];
  if (v === undefined || !/^\d+$/.test(v)) return -1;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : -1;
}

/** Parses `status.completedIndexes`, dropping indexes >= completions and corrupt parts. */
export function parseIndexes(s: string | undefined, completions: number): Interval[] {
  if (!s) return [];
  const out: Interval[] = [];
  for (const part of s.split(",")) {
    const [a, b] = part.split("-");
    const first = Number(a);
    if (a === undefined || a === "" || !Number.isInteger(first)) continue;
    if (first >= completions) break;
    let last = first;
    if (b !== undefined) {
      last = Number(b);
      if (b === "" || !Number.isInteger(last)) continue;
      if (last >= completions) last = completions - 1;
    }
    const prev = out.at(-1);
    if (prev && prev.last === first - 1) prev.last = last;
    else out.push({ first, last });
  }
  return out;
}

/** The intervals with `sorted` (ascending indexes) merged in. */
export function withIndexes(intervals: readonly Interval[], sorted: readonly number[]): Interval[] {
  const out: Interval[] = [];
  const add = (iv: Interval) => {
    const prev = out.at(-1);
    if (!prev || iv.first > prev.last + 1) out.push({ ...iv });
    else if (prev.last < iv.last) prev.last = iv.last;
  };
  let i = 0;
  let j = 0;
  while (i < intervals.length && j < sorted.length) {
    const iv = intervals[i] as Interval;
    const ix = sorted[j] as number;
    if (iv.first < ix) {
      add(iv);
      i++;
    } else {
      add({ first: ix, last: ix });
      j++;
    }
  }
  for (; i < intervals.length; i++) add(intervals[i] as Interval);
  for (; j < sorted.length; j++) add({ first: sorted[j] as number, last: sorted[j] as number });
  return out;
}

/** How many indexes the intervals hold. */
export function countIndexes(intervals: readonly Interval[]): number {
  let n = 0;
  for (const iv of intervals) n += iv.last - iv.first + 1;
  return n;
}

/** Whether `ix` is in the intervals. */
export function hasIndex(intervals: readonly Interval[], ix: number): boolean {
  return intervals.some((iv) => iv.first <= ix && ix <= iv.last);
}

/** The intervals as `status.completedIndexes` writes them. */
export function formatIndexes(intervals: readonly Interval[]): string {
  return intervals
    .map((iv) =>
      iv.last === iv.first
        ? `${iv.first}`
        : `${iv.first}${iv.last === iv.first + 1 ? "," : "-"}${iv.last}`,
    )
    .join(",");
}

/** The first `count` indexes below `completions` neither succeeded nor held by an active Pod. */
export function firstPendingIndexes(
  active: readonly Pod[],
  succeeded: readonly Interval[],
  count: number,
  completions: number,
): number[] {
  if (count <= 0) return [];
  const taken = [...new Set(active.map(completionIndex).filter((ix) => ix >= 0))].sort(
    (a, b) => a - b,
  );
  const out: number[] = [];
  let candidate = 0;
  for (const iv of withIndexes(succeeded, taken)) {
    for (; candidate < completions && out.length < count && candidate < iv.first; candidate++) {
      out.push(candidate);
    }
    if (candidate < iv.last + 1) candidate = iv.last + 1;
  }
  for (; candidate < completions && out.length < count; candidate++) out.push(candidate);
  return out;
}
