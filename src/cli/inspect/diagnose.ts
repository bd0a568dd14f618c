/**
 * `setpoint doctor`'s verdicts: from the facts gathered over the API, one
 * check per question (is the apiserver up, are the controllers' leaders alive,
 * are objects caught up with their spec, is anything stuck in deletion, is
 * anything written in a loop, have controllers been failing), each OK, WARN or
 * FAIL with the objects behind it. Pure: the command gathers, this judges and
 * renders. docs/doctor.md describes each check and its thresholds.
 */

import type { ApiserverInfo } from "./apiservers.ts";
import { formatAge } from "./duration.ts";
import type { EtcdMemberFacts } from "./etcd-members.ts";
import type { HotKey, HotLoop } from "./hot-loop.ts";
import type { GenerationLag } from "./lag.ts";
import type { LeaseInfo } from "./leases.ts";
import type { RepeatedList } from "./repeated-lists.ts";
import { objectLabel } from "./resources.ts";
import { describeHandling, isUnhandled, type StuckObject } from "./stuck.ts";
import type { WarningGroup } from "./warnings.ts";

export type Verdict = "OK" | "WARN" | "FAIL";

/** Rows shown per check in the human output (the JSON has them all). */
export const MAX_ROWS_PER_CHECK = 20;

/** What the apiserver answered on its health endpoints. */
export interface ServerFacts {
  url: string;
  /** gitVersion from /version ("" when unknown). */
  version: string;
  livez: { code: number; body: string };
  readyz: { code: number; body: string };
  /** Time for /version, in ms. */
  latencyMs: number;
}

/** Everything doctor gathered. */
export interface DoctorFacts {
  server: ServerFacts;
  /** Every apiserver with an identity Lease. */
  apiservers?: ApiserverInfo[];
  /** The etcd members the apiservers use (undefined: no etcd). */
  etcd?: EtcdMemberFacts[];
  leases: LeaseInfo[];
  /** Every object in deletion, however recent. */
  deleting: StuckObject[];
  /** Objects behind their spec for longer than the lag threshold. */
  lags: GenerationLag[];
  hotLoops: HotLoop[];
  hotKeys: HotKey[];
  /** Length of the write sample (0: not sampled). */
  sampledMs: number;
  warnings: WarningGroup[];
  /** Resources that could not be listed or watched. */
  unreadable: { resource: string; message: string }[];
  /**
   * Clients listing whole collections again and again during the sample window;
   * undefined when not checked (no window, or the server has no such metric).
   */
  repeatedLists?: RepeatedList[];
  /** Why repeated lists were not checked (when `repeatedLists` is undefined). */
  repeatedListsSkipped?: string;
}

/** The thresholds the verdicts use. */
export interface DoctorThresholds {
  lagMs: number;
  stuckMs: number;
  hotLoopRate: number;
  warningWindowMs: number;
}

/** One check's verdict. */
export interface Check {
  name: string;
  verdict: Verdict;
  summary: string;
  /** One line per object or item behind the verdict. */
  lines: string[];
  /** The same facts, structured (for -o json). */
  items: unknown[];
}

/** The whole report. */
export interface DoctorReport {
  healthy: boolean;
  checkedAt: string;
  thresholds: DoctorThresholds;
  checks: Check[];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function apiserverCheck(s: ServerFacts): Check {
  const live = s.livez.code === 200;
  const ready = s.readyz.code === 200;
  const health = `/livez ${live ? "ok" : `${s.livez.code} ${s.livez.body.trim()}`}, /readyz ${ready ? "ok" : `${s.readyz.code} ${s.readyz.body.trim()}`}`;
  return {
    name: "apiserver",
    verdict: live && ready ? "OK" : "FAIL",
    summary: `${s.url}${s.version ? ` (${s.version})` : ""}: ${health}, answered in ${Math.round(s.latencyMs)}ms`,
    lines: [],
    items: [s],
  };
}

function apiserversCheck(apiservers: ApiserverInfo[]): Check {
  const stale = apiservers.filter((a) => a.state === "stale");
  const lines = apiservers.map((a) =>
    a.state === "renewing"
      ? `OK    ${a.url || a.lease}: identity Lease ${a.lease} renewed ${formatAge(a.renewedAgoMs)} ago`
      : `WARN  ${a.url || a.lease}: identity Lease ${a.lease} not renewed for ${formatAge(a.renewedAgoMs)}: stopped or cut off from its storage`,
  );
  return {
    name: "apiservers",
    verdict: stale.length > 0 ? "WARN" : "OK",
    summary:
      apiservers.length === 0
        ? "no apiserver identity Leases"
        : `${plural(apiservers.length, "apiserver")}, ${apiservers.length - stale.length} renewing ${apiservers.length - stale.length === 1 ? "its" : "their"} identity Lease`,
    lines,
    items: apiservers,
  };
}

function etcdCheck(members: EtcdMemberFacts[] | undefined): Check {
  if (members === undefined || members.length === 0) {
    return { name: "etcd", verdict: "OK", summary: "no etcd in use", lines: [], items: [] };
  }
  const healthy = members.filter((m) => m.healthy);
  const leader = members.find((m) => m.leader);
  const quorum = healthy.length > members.length / 2;
  const lines = members.map((m) =>
    m.healthy
      ? `OK    ${m.endpoint}: healthy, etcd ${m.version}${m.leader ? ", leader" : ""} (term ${m.raftTerm})`
      : `FAIL  ${m.endpoint}: ${m.error ?? "unhealthy"}`,
  );
  return {
    name: "etcd",
    verdict: !quorum ? "FAIL" : healthy.length < members.length ? "WARN" : "OK",
    summary: `${healthy.length} of ${plural(members.length, "member")} healthy${quorum ? "" : ": no quorum, writes fail"}; leader ${leader ? leader.endpoint : "unknown"}`,
    lines,
    items: members,
  };
}

function controllersCheck(leases: LeaseInfo[]): Check {
  const expired = leases.filter((l) => l.state === "expired");
  const released = leases.filter((l) => l.state === "released");
  const lines = leases.map((l) => {
    const id = `${l.namespace}/${l.name}`;
    const fin = l.finalizers.length > 0 ? `; finalizers: ${l.finalizers.join(", ")}` : "";
    if (l.state === "live") {
      return `OK    ${id}: leader ${l.holder}, renewed ${formatAge(l.renewedAgoMs)} ago (lease ${formatAge(l.leaseDurationMs)})${fin}`;
    }
    if (l.state === "expired") {
      return `FAIL  ${id}: leader ${l.holder} last renewed ${formatAge(l.renewedAgoMs)} ago, lease is ${formatAge(l.leaseDurationMs)}: the leader is gone or hung${fin}`;
    }
    return `WARN  ${id}: no leader (released ${formatAge(l.renewedAgoMs)} ago): its controllers are not running${fin}`;
  });
  let summary: string;
  if (leases.length === 0) summary = "no controller leader Leases found";
  else if (expired.length + released.length === 0)
    summary = `${plural(leases.length, "leader Lease")}, all live`;
  else
    summary = `${plural(leases.length, "leader Lease")}: ${expired.length} expired, ${released.length} without a leader`;
  return {
    name: "controllers",
    verdict: expired.length > 0 ? "FAIL" : released.length > 0 ? "WARN" : "OK",
    summary,
    lines,
    items: leases,
  };
}

function generationCheck(lags: GenerationLag[], t: DoctorThresholds): Check {
  return {
    name: "observedGeneration",
    verdict: lags.length > 0 ? "WARN" : "OK",
    summary:
      lags.length > 0
        ? `${plural(lags.length, "object")} behind ${lags.length === 1 ? "its" : "their"} spec for longer than ${formatAge(t.lagMs)}`
        : `no object behind its spec for longer than ${formatAge(t.lagMs)}`,
    lines: lags.map(
      (l) =>
        `${objectLabel(l)}: generation ${l.generation}, observed ${l.observedGeneration ?? "never"}, behind for ${formatAge(l.behindForMs)}`,
    ),
    items: lags,
  };
}

function deletionCheck(deleting: StuckObject[], t: DoctorThresholds): Check {
  const stuck = deleting.filter((s) => s.deletingForMs >= t.stuckMs);
  const abandoned = stuck.filter((s) => s.finalizers.some(isUnhandled));
  const recent = deleting.length - stuck.length;
  const tail = recent > 0 ? ` (${recent} more being deleted for less)` : "";
  return {
    name: "deletion",
    verdict: abandoned.length > 0 ? "FAIL" : stuck.length > 0 ? "WARN" : "OK",
    summary:
      stuck.length > 0
        ? `${plural(stuck.length, "object")} in deletion for longer than ${formatAge(t.stuckMs)}, ${abandoned.length} waiting on finalizers nothing live removes${tail}; see setpoint finalizers list`
        : `no object in deletion for longer than ${formatAge(t.stuckMs)}${tail}`,
    lines: stuck.map(
      (s) =>
        `${objectLabel(s)}: deleting for ${formatAge(s.deletingForMs)}; ${s.finalizers.map(describeHandling).join("; ") || "no finalizers"}`,
    ),
    items: stuck,
  };
}

function hotLoopCheck(facts: DoctorFacts, t: DoctorThresholds): Check {
  const { hotLoops, hotKeys, sampledMs } = facts;
  const lines = [
    ...hotLoops.map((h) => {
      const parts = [
        h.specWrites > 0 ? `${h.specWrites} spec` : "",
        h.statusWrites > 0 ? `${h.statusWrites} status` : "",
        h.metadataWrites > 0 ? `${h.metadataWrites} metadata-only` : "",
        h.creates > 0 ? `${h.creates} creates` : "",
        h.deletes > 0 ? `${h.deletes} deletes` : "",
      ].filter(Boolean);
      return `${objectLabel(h)}: ${h.writes} writes in ${formatAge(sampledMs)} (${parts.join(", ")}); written by ${h.writers.join(", ") || "?"}`;
    }),
    ...hotKeys.map(
      (k) =>
        `${k.controller} (lease ${k.leaseNamespace}/${k.lease}) reconciled ${k.key} ${k.reconciles} times in ${k.windowSeconds}s`,
    ),
  ];
  const n = hotLoops.length + hotKeys.length;
  const how =
    sampledMs > 0
      ? `writes sampled for ${formatAge(sampledMs)}, threshold ${t.hotLoopRate}/s`
      : "write sampling off";
  return {
    name: "hotLoops",
    verdict: n > 0 ? "WARN" : "OK",
    summary:
      n > 0
        ? `${plural(n, "key")} reconciled or written far more often than ${n === 1 ? "its" : "their"} changes warrant (${how})`
        : `no hot loop seen (${how})`,
    lines,
    items: [...hotLoops, ...hotKeys],
  };
}

function repeatedListsCheck(facts: DoctorFacts): Check {
  const found = facts.repeatedLists;
  if (!found) {
    return {
      name: "repeatedLists",
      verdict: "OK",
      summary: `not checked: ${facts.repeatedListsSkipped ?? "no sample window"}`,
      lines: [],
      items: [],
    };
  }
  return {
    name: "repeatedLists",
    verdict: found.length > 0 ? "WARN" : "OK",
    summary:
      found.length > 0
        ? `${plural(found.length, "client")} listed a whole collection again and again: a list inside every reconcile defeats the cache (read from an informer instead)`
        : "no client lists whole collections repeatedly",
    lines: found.map(
      (r) =>
        `${r.client}: ${r.lists} lists of ${r.group ? `${r.resource}.${r.group}` : r.resource} in ${formatAge(r.windowMs)} (${r.total} since the apiserver started)`,
    ),
    items: found,
  };
}

function warningsCheck(warnings: WarningGroup[], t: DoctorThresholds): Check {
  const terminal = warnings.filter((w) => w.terminal).length;
  const since = `in the last ${formatAge(t.warningWindowMs)}`;
  return {
    name: "warnings",
    verdict: warnings.length > 0 ? "WARN" : "OK",
    summary:
      warnings.length > 0
        ? `${plural(warnings.length, "kind")} of Warning Event ${since}, ${terminal} of them terminal reconcile errors (not retried until the object changes)`
        : `no Warning Events ${since}`,
    lines: warnings.map(
      (w) =>
        `${w.component}${w.lease ? ` (lease ${w.lease})` : ""}: ${w.terminal ? "terminal error " : ""}${w.reason} on ${w.object}, ${w.count}x, last ${formatAge(w.lastSeenAgoMs)} ago: ${w.message}`,
    ),
    items: warnings,
  };
}

function coverageCheck(unreadable: DoctorFacts["unreadable"]): Check {
  return {
    name: "coverage",
    verdict: unreadable.length > 0 ? "WARN" : "OK",
    summary:
      unreadable.length > 0
        ? `${plural(unreadable.length, "resource")} could not be read; the checks above miss them`
        : "every served resource was read",
    lines: unreadable.map((u) => `${u.resource}: ${u.message}`),
    items: unreadable,
  };
}

/** Judges the facts. */
export function diagnose(facts: DoctorFacts, t: DoctorThresholds, now: Date): DoctorReport {
  const checks = [
    apiserverCheck(facts.server),
    apiserversCheck(facts.apiservers ?? []),
    etcdCheck(facts.etcd),
    controllersCheck(facts.leases),
    generationCheck(facts.lags, t),
    deletionCheck(facts.deleting, t),
    hotLoopCheck(facts, t),
    repeatedListsCheck(facts),
    warningsCheck(facts.warnings, t),
    coverageCheck(facts.unreadable),
  ];
  return {
    healthy: checks.every((c) => c.verdict === "OK"),
    checkedAt: now.toISOString(),
    thresholds: t,
    checks,
  };
}

/** A report that the apiserver could not be reached at all. */
export function unreachableReport(
  url: string,
  message: string,
  t: DoctorThresholds,
  now: Date,
): DoctorReport {
  return {
    healthy: false,
    checkedAt: now.toISOString(),
    thresholds: t,
    checks: [
      {
        name: "apiserver",
        verdict: "FAIL",
        summary: `${url}: unreachable: ${message}`,
        lines: [],
        items: [],
      },
    ],
  };
}

const TITLES: Record<string, string> = {
  apiserver: "API server",
  apiservers: "Apiservers",
  etcd: "etcd",
  controllers: "Controllers",
  observedGeneration: "Spec rollout",
  deletion: "Deletion",
  hotLoops: "Hot loops",
  repeatedLists: "Repeated lists",
  warnings: "Warnings",
  coverage: "Coverage",
};

/** The human-readable report. */
export function renderReport(r: DoctorReport): string {
  const out: string[] = [];
  for (const c of r.checks) {
    if (c.name === "coverage" && c.verdict === "OK") continue;
    out.push(`${`[${c.verdict}]`.padEnd(7)}${TITLES[c.name] ?? c.name}: ${c.summary}`);
    for (const line of c.lines.slice(0, MAX_ROWS_PER_CHECK)) out.push(`         ${line}`);
    if (c.lines.length > MAX_ROWS_PER_CHECK) {
      out.push(`         ... and ${c.lines.length - MAX_ROWS_PER_CHECK} more (-o json lists all)`);
    }
  }
  const fails = r.checks.filter((c) => c.verdict === "FAIL").length;
  const warns = r.checks.filter((c) => c.verdict === "WARN").length;
  out.push("");
  out.push(
    r.healthy
      ? "Healthy: no problem found."
      : `Problems found: ${plural(fails, "failure")}, ${plural(warns, "warning")}.`,
  );
  return `${out.join("\n")}\n`;
}
