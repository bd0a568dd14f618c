/**
 * core/v1 Node, Service, Endpoints and PodTemplate: defaults, status
 * subresources, and the columns of `kubectl get nodes,svc,ep,podtemplates`.
 */
import type { KubeObject } from "@setpoint/api";
import type { ResourceDefinition } from "../../types.ts";
import { field, fieldObject, fieldString } from "../build.ts";
import { AGE_COLUMN, listOrNone, NONE, templateContainers } from "./columns.ts";
import { workloadDefinition } from "./define.ts";
import { defaultTemplate } from "./pod-defaults.ts";
import { DEFAULT_SERVICE_RANGES, type ServiceRanges, serviceClaims } from "./service-allocation.ts";

type Obj = Record<string, unknown>;

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? (v.filter((x) => typeof x === "object" && x !== null) as Obj[]) : [];
}

/** Node STATUS: Ready, NotReady or Unknown, and SchedulingDisabled when cordoned. */
export function nodeStatusCell(obj: KubeObject): string {
  const ready = objects(field(obj, "status", "conditions")).find((c) => c.type === "Ready");
  const parts = [
    !ready
      ? "Unknown"
      : ready.status === "True"
        ? "Ready"
        : ready.status === "False"
          ? "NotReady"
          : "Unknown",
  ];
  if (field(obj, "spec", "unschedulable") === true) parts.push("SchedulingDisabled");
  return parts.join(",");
}

function nodeRoles(obj: KubeObject): string {
  const roles: string[] = [];
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
    if (k.startsWith("node-role.kubernetes.io/"))
      roles.push(k.slice("node-role.kubernetes.io/".length));
    else if (k === "kubernetes.io/role" && v) roles.push(v);
  }
  return roles.length ? roles.sort().join(",") : NONE;
}

function nodeAddress(obj: KubeObject, type: string): string {
  const a = objects(field(obj, "status", "addresses")).find((x) => x.type === type);
  return typeof a?.address === "string" ? a.address : NONE;
}

export const nodeDefinition = workloadDefinition({
  group: "",
  kind: "Node",
  plural: "nodes",
  shortNames: ["no"],
  namespaced: false,
  status: true,
  generation: false,
  columns: [
    {
      name: "Status",
      type: "string",
      priority: 0,
      description: "The node's readiness.",
      value: nodeStatusCell,
    },
    {
      name: "Roles",
      type: "string",
      priority: 0,
      description: "The node's roles.",
      value: nodeRoles,
    },
    AGE_COLUMN,
    {
      name: "Version",
      type: "string",
      priority: 0,
      description: "The agent's version.",
      value: (o) => fieldString(o, "status", "nodeInfo", "kubeletVersion"),
    },
    {
      name: "Internal-IP",
      type: "string",
      priority: 1,
      description: "The node's internal address.",
      value: (o) => nodeAddress(o, "InternalIP"),
    },
    {
      name: "External-IP",
      type: "string",
      priority: 1,
      description: "The node's external address.",
      value: (o) => nodeAddress(o, "ExternalIP"),
    },
    {
      name: "OS-Image",
      type: "string",
      priority: 1,
      description: "The node's OS image.",
      value: (o) => fieldString(o, "status", "nodeInfo", "osImage") || "<unknown>",
    },
    {
      name: "Kernel-Version",
      type: "string",
      priority: 1,
      description: "The node's kernel.",
      value: (o) => fieldString(o, "status", "nodeInfo", "kernelVersion") || "<unknown>",
    },
    {
      name: "Container-Runtime",
      type: "string",
      priority: 1,
      description: "The node's runtime.",
      value: (o) => fieldString(o, "status", "nodeInfo", "containerRuntimeVersion") || "<unknown>",
    },
  ],
  strategy: {
    prepareForCreate: (obj) => {
      const status = fieldObject(obj, "status");
      obj.status = status ?? {};
    },
    selectableFields: {
      "spec.unschedulable": (o) => String(field(o, "spec", "unschedulable") === true),
    },
  },
});

function defaultService(obj: KubeObject): void {
  const spec = fieldObject(obj, "spec");
  if (!spec) return;
  setIfAbsent(spec, "type", "ClusterIP");
  setIfAbsent(spec, "sessionAffinity", "None");
  for (const p of objects(spec.ports)) {
    setIfAbsent(p, "protocol", "TCP");
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === "")
      p.targetPort = p.port;
  }
  if (spec.type !== "ExternalName") setIfAbsent(spec, "internalTrafficPolicy", "Cluster");
  if (spec.type === "NodePort" || spec.type === "LoadBalancer") {
    setIfAbsent(spec, "externalTrafficPolicy", "Cluster");
  }
  if (spec.type === "LoadBalancer") setIfAbsent(spec, "allocateLoadBalancerNodePorts", true);
}

function servicePorts(obj: KubeObject): string {
  const ports = objects(field(obj, "spec", "ports"));
  if (ports.length === 0) return NONE;
  return ports
    .map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ""}/${p.protocol ?? "TCP"}`)
    .join(",");
}

function externalIP(obj: KubeObject): string {
  const type = fieldString(obj, "spec", "type");
  const external = field(obj, "spec", "externalIPs");
  const ips = Array.isArray(external) ? external.map(String) : [];
  if (type === "ExternalName") return fieldString(obj, "spec", "externalName") || NONE;
  if (type === "LoadBalancer") {
    const ingress = objects(field(obj, "status", "loadBalancer", "ingress"));
    const all = [...ingress.map((i) => String(i.ip ?? i.hostname ?? "")), ...ips].filter(Boolean);
    return all.length ? all.join(",") : "<pending>";
  }
  return listOrNone(ips);
}

function serviceSelector(obj: KubeObject): string {
  const sel = field(obj, "spec", "selector");
  if (!sel || typeof sel !== "object") return NONE;
  const pairs = Object.entries(sel as Record<string, string>).map(([k, v]) => `${k}=${v}`);
  return listOrNone(pairs.sort());
}

/** The Service type, its cluster IPs and node ports handed out from `ranges`. */
export function serviceDefinitionFor(
  ranges: ServiceRanges = DEFAULT_SERVICE_RANGES,
): ResourceDefinition {
  return workloadDefinition({
    group: "",
    kind: "Service",
    plural: "services",
    shortNames: ["svc"],
    categories: ["all"],
    namespaced: true,
    status: true,
    generation: false,
    columns: [
      {
        name: "Type",
        type: "string",
        priority: 0,
        description: "How the service is exposed.",
        value: (o) => fieldString(o, "spec", "type"),
      },
      {
        name: "Cluster-IP",
        type: "string",
        priority: 0,
        description: "The service's cluster address.",
        value: (o) => fieldString(o, "spec", "clusterIP") || NONE,
      },
      {
        name: "External-IP",
        type: "string",
        priority: 0,
        description: "The service's external addresses.",
        value: externalIP,
      },
      {
        name: "Port(s)",
        type: "string",
        priority: 0,
        description: "The service's ports.",
        value: servicePorts,
      },
      AGE_COLUMN,
      {
        name: "Selector",
        type: "string",
        priority: 1,
        description: "The pods the service selects.",
        value: serviceSelector,
      },
    ],
    strategy: { default: defaultService, claims: serviceClaims(ranges) },
  });
}

export const serviceDefinition = serviceDefinitionFor();

/** Up to three "ip:port" endpoints and how many more, as kubectl prints Endpoints. */
function endpointsCell(obj: KubeObject): string {
  const all: string[] = [];
  for (const subset of objects(obj.subsets)) {
    const ports = objects(subset.ports);
    for (const a of objects(subset.addresses)) {
      if (ports.length === 0) all.push(String(a.ip));
      for (const p of ports) all.push(`${a.ip}:${p.port}`);
    }
  }
  if (all.length === 0) return NONE;
  const shown = all.slice(0, 3).join(",");
  return all.length > 3 ? `${shown} + ${all.length - 3} more...` : shown;
}

export const endpointsDefinition = workloadDefinition({
  group: "",
  kind: "Endpoints",
  plural: "endpoints",
  shortNames: ["ep"],
  namespaced: true,
  status: false,
  generation: false,
  columns: [
    {
      name: "Endpoints",
      type: "string",
      priority: 0,
      description: "The addresses.",
      value: endpointsCell,
    },
  ],
  strategy: {
    default: (obj) => {
      for (const subset of objects(obj.subsets)) {
        for (const p of objects(subset.ports)) setIfAbsent(p, "protocol", "TCP");
      }
    },
  },
});

export const podTemplateDefinition = workloadDefinition({
  group: "",
  kind: "PodTemplate",
  plural: "podtemplates",
  namespaced: true,
  status: false,
  generation: true,
  columns: [
    {
      name: "Containers",
      type: "string",
      priority: 0,
      description: "The template's containers.",
      value: (o) =>
        templateContainers(o, "template", "spec")
          .map((c) => c.name)
          .join(","),
    },
    {
      name: "Images",
      type: "string",
      priority: 0,
      description: "The containers' images.",
      value: (o) =>
        templateContainers(o, "template", "spec")
          .map((c) => c.image)
          .join(","),
    },
    {
      name: "Pod Labels",
      type: "string",
      priority: 0,
      description: "The template's labels.",
      value: (o) => {
        const labels = field(o, "template", "metadata", "labels");
        if (!labels || typeof labels !== "object") return NONE;
        return listOrNone(
          Object.entries(labels as Record<string, string>)
            .map(([k, v]) => `${k}=${v}`)
            .sort(),
        );
      },
    },
  ],
  strategy: {
    default: (obj) => {
      const template = fieldObject(obj, "template");
      if (template) defaultTemplate({ spec: { template } });
    },
  },
});
