/**
 * The EndpointSlice controller (`endpointslice`): for every Service with a
 * selector, EndpointSlices (generated names `<service>-`, owned by the Service)
 * holding the selected Pods as endpoints with their ready, serving and
 * terminating conditions, at most `maxEndpointsPerSlice` each (default 100),
 * one set of slices per distinct port mapping (named target ports resolved per
 * Pod). Slices carry kubernetes.io/service-name, endpointslice.kubernetes.io/
 * managed-by=endpointslice-controller.k8s.io, the Service's labels, the headless
 * label, and the last-change-trigger-time annotation. Endpoints stay in the
 * slice they are in while it has them; slices with nothing left go (one empty
 * slice stays for a Service with no endpoints). Nothing is written when nothing
 * changed.
 */
import type { EndpointSlice, KubeObject, Pod, Service } from "@setpoint/api";
import { deepEqual } from "@setpoint/api";
import {
  type Client,
  type Informer,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type Manager,
  type ReconcileContext,
  type Result,
} from "@setpoint/runtime";
import type { BuiltinController } from "../builtin-controller.ts";
import { deleteIgnoringGone, endpointLabels } from "./endpoints-controller.ts";
import {
  inEndpoints,
  podReady,
  podRef,
  selectedPods,
  servicesOf,
  TRIGGER_TIME_ANNOTATION,
  targetPortOf,
  triggerTime,
} from "./pods.ts";

export const ENDPOINTSLICE_CONTROLLER = "endpointslice";
/** Kubernetes' default (--max-endpoints-per-slice), also its upper bound of 1000. */
export const DEFAULT_MAX_ENDPOINTS_PER_SLICE = 100;
/** Concurrent reconciles (Kubernetes' --concurrent-service-endpoint-syncs default). */
export const DEFAULT_ENDPOINTSLICE_WORKERS = 5;
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
export const MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
export const MANAGED_BY = "endpointslice-controller.k8s.io";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SERVICE = { apiVersion: "v1", kind: "Service" } as const;
const SLICE = { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" } as const;

type Endpoint = EndpointSlice["endpoints"][number];
type SlicePort = NonNullable<EndpointSlice["ports"]>[number];

export interface EndpointSliceControllerOptions {
  /** Endpoints per slice at most (default 100). */
  maxEndpointsPerSlice?: number;
  workers?: number;
}

/** The Service's Pods as endpoints, grouped by their resolved port list (its JSON is the key). */
export function desiredEndpoints(
  svc: Service,
  pods: readonly Pod[],
): Map<string, { ports: SlicePort[]; endpoints: Endpoint[] }> {
  const publishAll = svc.spec?.publishNotReadyAddresses === true;
  const groups = new Map<string, { ports: SlicePort[]; endpoints: Endpoint[] }>();
  const svcPorts = svc.spec?.ports ?? [];
  for (const p of pods) {
    if (!inEndpoints(p, true)) continue;
    const ports: SlicePort[] = [];
    for (const sp of svcPorts) {
      const port = targetPortOf(p, sp);
      if (port === undefined) continue;
      ports.push({
        name: sp.name ?? "",
        port,
        protocol: sp.protocol ?? "TCP",
        ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}),
      });
    }
    if (svcPorts.length > 0 && ports.length === 0) continue;
    const terminating = Boolean(p.metadata.deletionTimestamp);
    const serving = publishAll || podReady(p);
    const endpoint: Endpoint = {
      addresses: [p.status!.podIP!],
      conditions: { ready: serving && !terminating, serving, terminating },
      ...(p.spec?.hostname && p.spec.subdomain === svc.metadata.name
        ? { hostname: p.spec.hostname }
        : {}),
      ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
      targetRef: podRef(p),
    };
    if (publishAll) endpoint.conditions = { ready: true, serving: true, terminating };
    const key = JSON.stringify(ports);
    let g = groups.get(key);
    if (!g) {
      g = { ports, endpoints: [] };
      groups.set(key, g);
    }
    g.endpoints.push(endpoint);
  }
  return groups;
}

const endpointKey = (e: Endpoint) => `${e.targetRef?.uid ?? ""}/${e.addresses[0] ?? ""}`;
const byKey = (a: Endpoint, b: Endpoint) => endpointKey(a).localeCompare(endpointKey(b));

interface PlannedSlice {
  current: EndpointSlice | undefined;
  ports: SlicePort[];
  endpoints: Endpoint[];
}

/**
 * Places the desired endpoints in slices: each stays in the existing slice of
 * its port mapping that holds it, new ones fill slices with room, then new
 * slices; returns the slices to have and the existing ones to delete.
 */
export function planSlices(
  existing: readonly EndpointSlice[],
  desired: Map<string, { ports: SlicePort[]; endpoints: Endpoint[] }>,
  max: number,
): { keep: PlannedSlice[]; remove: EndpointSlice[] } {
  const keep: PlannedSlice[] = [];
  const used = new Set<EndpointSlice>();
  for (const [key, group] of desired) {
    const wanted = new Map(group.endpoints.map((e) => [endpointKey(e), e]));
    const mine = existing.filter((s) => !used.has(s) && JSON.stringify(s.ports ?? []) === key);
    const planned: PlannedSlice[] = [];
    for (const s of mine) {
      const held: Endpoint[] = [];
      for (const e of s.endpoints ?? []) {
        const k = endpointKey(e);
        const w = wanted.get(k);
        if (w && held.length < max) {
          held.push(w);
          wanted.delete(k);
        }
      }
      planned.push({ current: s, ports: group.ports, endpoints: held });
    }
    const rest = [...wanted.values()].sort(byKey);
    for (const p of planned) {
      while (p.endpoints.length < max && rest.length > 0) p.endpoints.push(rest.shift()!);
    }
    while (rest.length > 0) {
      planned.push({ current: undefined, ports: group.ports, endpoints: rest.splice(0, max) });
    }
    for (const p of planned) {
      if (p.endpoints.length === 0 && p.current) continue;
      if (p.current) used.add(p.current);
      p.endpoints.sort(byKey);
      keep.push(p);
    }
  }
  // No endpoints at all: one empty slice stays (the placeholder Kubernetes keeps).
  if (keep.length === 0) {
    const placeholder = existing.find((s) => (s.endpoints ?? []).length === 0) ?? existing[0];
    keep.push({ current: placeholder, ports: [], endpoints: [] });
    if (placeholder) used.add(placeholder);
  }
  return { keep, remove: existing.filter((s) => !used.has(s)) };
}

export class EndpointSliceController implements BuiltinController {
  readonly name = ENDPOINTSLICE_CONTROLLER;
  private pods!: Informer<Pod>;
  private services!: Informer<Service>;
  private slices!: Informer<EndpointSlice>;

  constructor(private readonly opts: EndpointSliceControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.services = mgr.cache.informerFor<Service>(SERVICE);
    this.slices = mgr.cache.informerFor<EndpointSlice>(SLICE);
    mgr
      .controller(ENDPOINTSLICE_CONTROLLER)
      .for(SERVICE)
      .watches<Pod>(POD, (p) =>
        servicesOf(p, this.services.list({ namespace: p.metadata.namespace })).map((s) => ({
          name: s.metadata.name ?? "",
          namespace: s.metadata.namespace ?? "",
        })),
      )
      .watches<EndpointSlice>(SLICE, (s) => {
        const svc = s.metadata.labels?.[SERVICE_NAME_LABEL];
        if (!svc || s.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return undefined;
        return { name: svc, namespace: s.metadata.namespace ?? "" };
      })
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_ENDPOINTSLICE_WORKERS,
      })
      .complete((req, ctx) => this.reconcile(req.name, req.namespace ?? "", ctx));
  }

  private async reconcile(
    name: string,
    namespace: string,
    ctx: ReconcileContext,
  ): Promise<Result | undefined> {
    let svc: Service | undefined;
    try {
      svc = await ctx.reader.get<Service>(SERVICE, name, namespace);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    const existing = this.slices
      .list({ namespace })
      .filter(
        (s) =>
          s.metadata.labels?.[SERVICE_NAME_LABEL] === name &&
          s.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY,
      );
    const hasSelector = svc?.spec?.selector && Object.keys(svc.spec.selector).length > 0;
    if (!svc || !hasSelector) {
      for (const s of existing) await deleteIgnoringGone(ctx, { ...SLICE, ...s } as KubeObject);
      return undefined;
    }
    if (svc.metadata.deletionTimestamp) return undefined;
    const pods = selectedPods(svc, this.pods.list({ namespace }));
    const max = this.opts.maxEndpointsPerSlice ?? DEFAULT_MAX_ENDPOINTS_PER_SLICE;
    const { keep, remove } = planSlices(existing, desiredEndpoints(svc, pods), max);
    const labels = {
      ...endpointLabels(svc),
      [SERVICE_NAME_LABEL]: name,
      [MANAGED_BY_LABEL]: MANAGED_BY,
    };
    const trigger = triggerTime(svc, pods);
    const owner = {
      apiVersion: "v1",
      kind: "Service",
      name,
      uid: svc.metadata.uid ?? "",
      controller: true,
      blockOwnerDeletion: true,
    };
    try {
      for (const plan of keep) {
        const cur = plan.current;
        if (
          cur &&
          deepEqual(cur.endpoints ?? [], plan.endpoints) &&
          deepEqual(cur.ports ?? [], plan.ports) &&
          deepEqual(cur.metadata.labels ?? {}, labels)
        ) {
          continue;
        }
        const annotations = { ...(cur?.metadata.annotations ?? {}) };
        if (trigger) annotations[TRIGGER_TIME_ANNOTATION] = trigger;
        const slice = {
          ...SLICE,
          metadata: cur
            ? { ...cur.metadata, labels, annotations }
            : {
                generateName: `${name}-`,
                namespace,
                labels,
                annotations,
                ownerReferences: [owner],
              },
          addressType: "IPv4",
          endpoints: plan.endpoints,
          ...(plan.ports.length > 0 ? { ports: plan.ports } : {}),
        } as EndpointSlice & KubeObject;
        if (cur) await ctx.client.update(slice);
        else await ctx.client.create(slice);
      }
      for (const s of remove) await deleteIgnoringGone(ctx, { ...SLICE, ...s } as KubeObject);
    } catch (e) {
      // The cache was behind: look again once the watch has caught up.
      if (isConflict(e) || isAlreadyExists(e)) return { requeueAfter: 100 };
      throw e;
    }
    return undefined;
  }
}
