/**
 * Judging recorded writes: a write is redundant when it left its object exactly
 * as the write before it (by anyone) had left it, i.e. it changed nothing.
 */
import type { CommittedWrite } from "./proxy.ts";

export interface RedundantWrite {
  write: CommittedWrite;
  /** The write before it on the same object. */
  previous: CommittedWrite;
}

export interface WriteAudit {
  /** Writes by the subject, per "METHOD resource". */
  byVerb: Record<string, number>;
  /** Subject writes that changed nothing, per object UID. */
  redundant: Map<string, RedundantWrite[]>;
  /** Subject writes whose answer was lost, per object UID. */
  answerLost: Map<string, number>;
}

/** Orders an object's writes; its delete (no resourceVersion) comes last. */
function byVersion(a: CommittedWrite, b: CommittedWrite): number {
  const last = 2n ** 64n;
  const x = a.resourceVersion ? BigInt(a.resourceVersion) : last;
  const y = b.resourceVersion ? BigInt(b.resourceVersion) : last;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Audits the writes to `resources` (an object's writes are ordered by resourceVersion). */
export function auditWrites(
  writes: readonly CommittedWrite[],
  resources: readonly string[],
): WriteAudit {
  const audit: WriteAudit = { byVerb: {}, redundant: new Map(), answerLost: new Map() };
  const perObject = new Map<string, CommittedWrite[]>();
  for (const w of writes) {
    if (!resources.includes(w.resource) || !w.uid) continue;
    const list = perObject.get(w.uid) ?? [];
    list.push(w);
    perObject.set(w.uid, list);
  }
  for (const [uid, list] of perObject) {
    list.sort(byVersion);
    for (let i = 0; i < list.length; i++) {
      const w = list[i];
      if (!w.subject) continue;
      const verb = `${w.method} ${w.resource}`;
      audit.byVerb[verb] = (audit.byVerb[verb] ?? 0) + 1;
      if (w.answerLost) audit.answerLost.set(uid, (audit.answerLost.get(uid) ?? 0) + 1);
      const prev = list[i - 1];
      if (prev && prev.content === w.content) {
        const r = audit.redundant.get(uid) ?? [];
        r.push({ write: w, previous: prev });
        audit.redundant.set(uid, r);
      }
    }
  }
  return audit;
}
