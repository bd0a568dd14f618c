/**
 * The Endpoints controller (`endpoint`): for every Service with a selector, an
 * Endpoints object of the same name listing the selected Pods' IPs, ready ones
 * under `addresses` and the others under `notReadyAddresses` (all ready with
 * publishNotReadyAddresses), grouped into subsets by the ports they serve
 * (named target ports resolved per Pod), with the Service's labels, the headless
 * label, and the last-change-trigger-time annotation. Services without a
 * selector are left alone (their Endpoints are the user's); an Endpoints whose
 * Service is gone is deleted. Nothing is written when nothing changed.
 */
import type { Endpoints, KubeObject, Pod, Service } from "@setpoint/api";
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
import {
  HEADLESS_LABEL,
  inEndpoints,
  isHeadless,
  podReady,
  podRef,
  selectedPods,
  servicesOf,
  TRIGGER_TIME_ANNOTATION,
  targetPortOf,
  triggerTime,
} from "./pods.ts";

export const ENDPOINT_CONTROLLER = "endpoint";
/** Concurrent reconciles (Kubernetes' --concurrent-endpoint-syncs default). */
export const DEFAULT_ENDPOINT_WORKERS = 5;

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SERVICE = { apiVersion: "v1", kind: "Service" } as const;
const ENDPOINTS = { apiVersion: "v1", kind: "Endpoints" } as const;

type Subset = NonNullable<Endpoints["subsets"]>[number];
type Address = NonNullable<Subset["addresses"]>[number];
type Port = NonNullable<Subset["ports"]>[number];

export interface EndpointControllerOptions {
  workers?: number;
}

/** The subsets of `svc` over its Pods, grouped by the ports each Pod serves, sorted. */
export function endpointSubsets(svc: Service, pods: readonly Pod[]): Subset[] {
  const publishAll = svc.spec?.publishNotReadyAddresses === true;
  const groups = new Map<string, { ports: Port[]; ready: Address[]; notReady: Address[] }>();
  const svcPorts = svc.spec?.ports ?? [];
  for (const p of pods) {
    if (!inEndpoints(p, publishAll)) continue;
    const ports: Port[] = [];
    for (const sp of svcPorts) {
      const port = targetPortOf(p, sp);
      if (port === undefined) continue;
      ports.push({
        ...(sp.name ? { name: sp.name } : {}),
        port,
        protocol: sp.protocol ?? "TCP",
        ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}),
      });
    }
    // A Service with ports the Pod serves none of has nothing to reach on it; a
    // headless Service without ports lists addresses alone.
    if (svcPorts.length > 0 && ports.length === 0) continue;
    ports.sort((a, b) => (a.name ?? "").localeCompare(b.name ?? "") || a.port - b.port);
    const key = JSON.stringify(ports);
    let g = groups.get(key);
    if (!g) {
      g = { ports, ready: [], notReady: [] };
      groups.set(key, g);
    }
    const address: Address = {
      ip: p.status!.podIP!,
      ...(p.spec?.nodeName ? { nodeName: p.spec.nodeName } : {}),
      targetRef: podRef(p),
    };
    if (p.spec?.hostname && p.spec.subdomain === svc.metadata.name) {
      address.hostname = p.spec.hostname;
    }
    if (publishAll || podReady(p)) g.ready.push(address);
    else g.notReady.push(address);
  }
  const byIp = (a: Address, b: Address) =>
    a.ip.localeCompare(b.ip) || (a.targetRef?.uid ?? "").localeCompare(b.targetRef?.uid ?? "");
  const subsets = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, g]) => {
      const s: Subset = {};
      if (g.ready.length > 0) s.addresses = g.ready.sort(byIp);
      if (g.notReady.length > 0) s.notReadyAddresses = g.notReady.sort(byIp);
      if (g.ports.length > 0) s.ports = g.ports;
      return s;
    });
  return subsets;
}

/** The labels the Endpoints of `svc` carry: the Service's, and the headless label. */
export function endpointLabels(svc: Service): Record<string, string> {
  const labels: Record<string, string> = { ...(svc.metadata.labels ?? {}) };
  if (isHeadless(svc)) labels[HEADLESS_LABEL] = "";
  else delete labels[HEADLESS_LABEL];
  return labels;
}

export class EndpointController implements BuiltinController {
  readonly name = ENDPOINT_CONTROLLER;
  private pods!: Informer<Pod>;
  private services!: Informer<Service>;

  constructor(private readonly opts: EndpointControllerOptions = {}) {}

  setup(mgr: Manager, client: Client = mgr.client): void {
    this.pods = mgr.cache.informerFor<Pod>(POD);
    this.services = mgr.cache.informerFor<Service>(SERVICE);
    mgr
      .controller(ENDPOINT_CONTROLLER)
      .for(SERVICE)
      .watches<Pod>(POD, (p) =>
        servicesOf(p, this.services.list({ namespace: p.metadata.namespace })).map((s) => ({
          name: s.metadata.name ?? "",
          namespace: s.metadata.namespace ?? "",
        })),
      )
      .watches(ENDPOINTS, (e) => ({
        name: e.metadata.name ?? "",
        namespace: e.metadata.namespace ?? "",
      }))
      .withOptions({
        client,
        maxConcurrentReconciles: this.opts.workers ?? DEFAULT_ENDPOINT_WORKERS,
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
    let current: Endpoints | undefined;
    try {
      current = await ctx.reader.get<Endpoints>(ENDPOINTS, name, namespace);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
    if (!svc) {
      // The Service is gone: so go its Endpoints (those it made; a Service's
      // Endpoints share its name).
      if (current) await deleteIgnoringGone(ctx, { ...ENDPOINTS, ...current } as KubeObject);
      return undefined;
    }
    if (!svc.spec?.selector || Object.keys(svc.spec.selector).length === 0) return undefined;
    if (svc.metadata.deletionTimestamp) return undefined;
    const pods = selectedPods(svc, this.pods.list({ namespace }));
    const subsets = endpointSubsets(svc, pods);
    const labels = endpointLabels(svc);
    if (
      current &&
      deepEqual(current.subsets ?? [], subsets) &&
      deepEqual(current.metadata.labels ?? {}, labels)
    ) {
      return undefined;
    }
    const annotations: Record<string, string> = { ...(current?.metadata.annotations ?? {}) };
    const trigger = triggerTime(svc, pods);
    if (trigger) annotations[TRIGGER_TIME_ANNOTATION] = trigger;
    const next: Endpoints & KubeObject = {
      ...ENDPOINTS,
      metadata: {
        ...(current?.metadata ?? {}),
        name,
        namespace,
        labels,
        annotations,
      },
      ...(subsets.length > 0 ? { subsets } : {}),
    };
    try {
      if (current) await ctx.client.update(next);
      else await ctx.client.create(next);
    } catch (e) {
      // The cache was behind: the watch brings the key back.
      if (isConflict(e) || isAlreadyExists(e)) return { requeueAfter: 0 };
      throw e;
    }
    return undefined;
  }
}

/** Deletes `obj`; one already gone is what was asked. */
export async function deleteIgnoringGone(ctx: ReconcileContext, obj: KubeObject): Promise<void> {
  try {
    await ctx.client.delete(
      { apiVersion: obj.apiVersion ?? "", kind: obj.kind ?? "" },
      obj.metadata.name ?? "",
      obj.metadata.namespace,
    );
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
}
