/** Cell values shared by the workload kinds' printer columns, as kubectl prints them. */
import { formatLabelSelector, type KubeObject, labelSelectorFromMetav1 } from "@setpoint/api";
import { field } from "../build.ts";

/** What Kubernetes prints for an absent value. */
export const NONE = "<none>";

/** A list of strings joined with ",", or <none>. */
export function listOrNone(values: string[]): string {
  return values.length ? values.join(",") : NONE;
}

/** The containers of a pod template (at `path`) as name and image lists. */
export function templateContainers(
  obj: KubeObject,
  ...path: string[]
): { name: string; image: string }[] {
  const list = field(obj, ...path, "containers");
  if (!Array.isArray(list)) return [];
  return list.map((c) => ({
    name: String((c as { name?: unknown }).name ?? ""),
    image: String((c as { image?: unknown }).image ?? ""),
  }));
}

/** A metav1.LabelSelector printed as kubectl prints it (a=b,c in (d)), or <none>. */
export function selectorCell(sel: unknown): string {
  if (typeof sel !== "object" || sel === null) return NONE;
  try {
    const text = formatLabelSelector(labelSelectorFromMetav1(sel as never));
    return text === "" ? NONE : text;
  } catch {
    return NONE;
  }
}

/** A number field, or 0 when absent. */
export function count(obj: unknown, ...path: string[]): number {
  const v = field(obj, ...path);
  return typeof v === "number" ? v : 0;
}

/**
 * A duration as kubectl prints one (apimachinery's HumanDuration): 45s, 3m20s,
 * 2h5m, 3d4h, 2y30d.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  if (years < 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${years}y` : `${years}y${d}d`;
  }
  return `${years}y`;
}

/** The Age column, declared where wide columns follow it (the server adds it last otherwise). */
export const AGE_COLUMN = {
  name: "Age",
  type: "date",
  priority: 0,
  description: "Time since creation.",
  jsonPath: ".metadata.creationTimestamp",
} as const;
