/**
 * Recent Warning Events: how reconcile failures surface. The runtime records a
 * `TerminalError` (an error retrying cannot fix) as a Warning Event on the
 * object, with the error's reason (default "ReconcileError"), the controller's
 * name as reporting component and action `TerminalError`, by which these are
 * told apart (`terminal`) from the warnings other components record. Events
 * with the same component, reason, object and kind (terminal or not) are grouped.
 */
import type { KubeObject } from "@setpoint/api";
import { lastOccurrence, TERMINAL_ERROR_ACTION } from "@setpoint/runtime";
import { ageOf } from "./duration.ts";
import type { LeaseInfo } from "./leases.ts";

/** Default window of "recent". */
export const DEFAULT_WARNING_WINDOW_MS = 15 * 60_000;

/** A group of Warning Events about one object. */
export interface WarningGroup {
  component: string;
  reason: string;
  /** "Kind namespace/name" of the object. */
  object: string;
  /** Occurrences within the window (the Events' counts summed). */
  count: number;
  /** The latest message. */
  message: string;
  lastSeen: string;
  lastSeenAgoMs: number;
  /** The controller Lease whose leader reported it, when the reporter is a current leader. */
  lease?: string;
  /** A reconcile error its controller does not retry (a runtime TerminalError). */
  terminal: boolean;
}

interface EventLike extends KubeObject {
  type?: string;
  reason?: string;
  message?: string;
  note?: string;
  count?: number;
  deprecatedCount?: number;
  series?: { count?: number; lastObservedTime?: string };
  involvedObject?: { kind?: string; namespace?: string; name?: string };
  regarding?: { kind?: string; namespace?: string; name?: string };
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingController?: string;
  reportingInstance?: string;
  action?: string;
}

/** Warning Events seen within `windowMs` of `now`, grouped, most recent first. */
export function recentWarnings(
  events: Iterable<KubeObject>,
  leases: LeaseInfo[],
  now: number,
  windowMs: number,
): WarningGroup[] {
  const holders = new Map(
    leases.filter((l) => l.state === "live").map((l) => [l.holder, `${l.namespace}/${l.name}`]),
  );
  const seen = new Set<string>();
  const groups = new Map<string, WarningGroup>();
  for (const e of events) {
    const ev = e as EventLike;
    if (ev.type !== "Warning") continue;
    const uid = e.metadata.uid ?? "";
    if (uid && seen.has(uid)) continue; // the same Event under core/v1 and events.k8s.io
    seen.add(uid);
    const lastSeen = lastOccurrence(e);
    const ago = ageOf(lastSeen, now);
    if (!(ago <= windowMs)) continue;
    const ref = ev.involvedObject ?? ev.regarding ?? {};
    const object = `${ref.kind ?? "?"} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name ?? "?"}`;
    const component =
      ev.reportingComponent || ev.reportingController || ev.source?.component || "(unknown)";
    const reason = ev.reason ?? "";
    const terminal = ev.action === TERMINAL_ERROR_ACTION;
    const key = `${component}|${reason}|${object}|${terminal}`;
    const count = ev.series?.count ?? ev.count ?? ev.deprecatedCount ?? 1;
    const g = groups.get(key);
    const instance = ev.reportingInstance || ev.source?.host || "";
    const lease = holders.get(instance);
    if (!g) {
      groups.set(key, {
        component,
        reason,
        object,
        count,
        message: ev.message ?? ev.note ?? "",
        lastSeen,
        lastSeenAgoMs: ago,
        ...(lease ? { lease } : {}),
        terminal,
      });
    } else {
      g.count += count;
      if (ago < g.lastSeenAgoMs) {
        g.message = ev.message ?? ev.note ?? "";
        g.lastSeen = lastSeen;
        g.lastSeenAgoMs = ago;
      }
      if (lease) g.lease = lease;
    }
  }
  // Terminal errors first: nothing will try those again.
  return [...groups.values()].sort(
    (a, b) => Number(b.terminal) - Number(a.terminal) || a.lastSeenAgoMs - b.lastSeenAgoMs,
  );
}
