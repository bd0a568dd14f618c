/**
 * The Pod's `log` subresource (GET /api/v1/namespaces/NS/pods/NAME/log, verb get
 * on `pods/log`), as Kubernetes' LogLocation and ValidatePodLogOptions define it:
 * the PodLogOptions query (container, follow, previous, timestamps, sinceSeconds,
 * sinceTime, tailLines, limitBytes) is parsed and validated (422 Invalid, kind
 * PodLogOptions), the container is the one named or the Pod's only one (400 when
 * there are several and none is named, or the one named is not the Pod's), and the
 * answer comes from `/containerLogs/NS/NAME/CONTAINER` on the Pod's node. A Pod
 * not yet bound to a node has no logs: the answer is empty, as in Kubernetes.
 */
import { errors, type KubeObject, type StatusCause } from "@setpoint/api";
import type { NodeStreamLocation, NodeStreamSubresource } from "../../types.ts";
import { forbidden, invalid } from "../causes.ts";

interface PodLogOptions {
  container?: string;
  follow?: boolean;
  previous?: boolean;
  timestamps?: boolean;
  sinceSeconds?: number;
  sinceTime?: string;
  tailLines?: number;
  limitBytes?: number;
}

const GO_TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const GO_FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

export function boolParam(query: URLSearchParams, name: string): boolean | undefined {
  const v = query.get(name);
  if (v === null || v === "") return undefined;
  if (GO_TRUE.has(v)) return true;
  if (GO_FALSE.has(v)) return false;
  throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}

function intParam(query: URLSearchParams, name: string): number | undefined {
  const v = query.get(name);
  if (v === null || v === "") return undefined;
  if (!/^[+-]?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
    throw errors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  }
  return Number(v);
}

/** RFC 3339 with or without fractional seconds, as metav1.Time parses it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** The PodLogOptions of a request's query. */
export function podLogOptions(query: URLSearchParams): PodLogOptions {
  const opts: PodLogOptions = {};
  const container = query.get("container");
  if (container) opts.container = container;
  for (const name of ["follow", "previous", "timestamps"] as const) {
    const b = boolParam(query, name);
    if (b !== undefined) opts[name] = b;
  }
  for (const name of ["sinceSeconds", "tailLines", "limitBytes"] as const) {
    const n = intParam(query, name);
    if (n !== undefined) opts[name] = n;
  }
  const since = query.get("sinceTime");
  if (since) {
    if (!RFC3339.test(since) || Number.isNaN(Date.parse(since))) {
      throw errors.badRequest(
        `parsing time ${JSON.stringify(since)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(since)} as "2006"`,
      );
    }
    opts.sinceTime = new Date(since).toISOString().replace(/\.\d+Z$/, "Z");
  }
  return opts;
}

/** Kubernetes' ValidatePodLogOptions. */
export function validatePodLogOptions(opts: PodLogOptions): StatusCause[] {
  const causes: StatusCause[] = [];
  if (opts.tailLines !== undefined && opts.tailLines < 0) {
    causes.push(invalid("tailLines", opts.tailLines, "must be greater than or equal to 0"));
  }
  if (opts.limitBytes !== undefined && opts.limitBytes < 1) {
    causes.push(invalid("limitBytes", opts.limitBytes, "must be greater than 0"));
  }
  if (opts.sinceSeconds !== undefined && opts.sinceTime !== undefined) {
    causes.push(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"));
  } else if (opts.sinceSeconds !== undefined && opts.sinceSeconds < 1) {
    causes.push(invalid("sinceSeconds", opts.sinceSeconds, "must be greater than 0"));
  }
  return causes;
}

type Named = { name?: string };

/** Every container's name: init containers, containers, ephemeral containers (Kubernetes' VisitContainers order). */
export function containerNames(spec: Record<string, unknown>): string[] {
  const names = (list: unknown) =>
    Array.isArray(list) ? (list as Named[]).map((c) => c.name ?? "") : [];
  return [
    ...names(spec.initContainers),
    ...names(spec.containers),
    ...names(spec.ephemeralContainers),
  ];
}

/** The container a request is for (Kubernetes' validateContainer). */
export function logContainer(pod: KubeObject, container: string | undefined): string {
  const spec = (pod.spec ?? {}) as Record<string, unknown>;
  const name = pod.metadata.name ?? "";
  if (!container) {
    const main = Array.isArray(spec.containers) ? (spec.containers as Named[]) : [];
    if (main.length === 1) return main[0].name ?? "";
    if (main.length === 0) {
      throw errors.badRequest(`a container name must be specified for pod ${name}`);
    }
    throw errors.badRequest(
      `a container name must be specified for pod ${name}, choose one of: [${containerNames(spec).join(" ")}]`,
    );
  }
  if (!containerNames(spec).includes(container)) {
    throw errors.badRequest(`container ${container} is not valid for pod ${name}`);
  }
  return container;
}

export const podLogSubresource: NodeStreamSubresource = {
  name: "log",
  locate(pod, query): NodeStreamLocation | undefined {
    const opts = podLogOptions(query);
    const name = pod.metadata.name ?? "";
    const causes = validatePodLogOptions(opts);
    if (causes.length > 0) throw errors.invalid("PodLogOptions", name, causes);
    const container = logContainer(pod, opts.container);
    const node = ((pod.spec ?? {}) as { nodeName?: string }).nodeName;
    if (!node) return undefined;
    const params = new URLSearchParams();
    if (opts.follow) params.set("follow", "true");
    if (opts.previous) params.set("previous", "true");
    if (opts.timestamps) params.set("timestamps", "true");
    if (opts.sinceSeconds !== undefined) params.set("sinceSeconds", String(opts.sinceSeconds));
    if (opts.sinceTime !== undefined) params.set("sinceTime", opts.sinceTime);
    if (opts.tailLines !== undefined) params.set("tailLines", String(opts.tailLines));
    if (opts.limitBytes !== undefined) params.set("limitBytes", String(opts.limitBytes));
    const ns = pod.metadata.namespace ?? "";
    const seg = encodeURIComponent;
    return {
      node,
      path: `/containerLogs/${seg(ns)}/${seg(name)}/${seg(container)}`,
      query: params,
    };
  },
};
