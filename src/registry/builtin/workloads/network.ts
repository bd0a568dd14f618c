/**
 * discovery.k8s.io/v1 EndpointSlice, networking.k8s.io/v1 Ingress and
 * IngressClass, policy/v1 PodDisruptionBudget: status subresources, generation,
 * and the columns of `kubectl get endpointslices,ingress,ingressclass,pdb`.
 */
import type { KubeObject } from "@setpoint/api";
import { field, fieldString } from "../build.ts";
import { count, NONE } from "./columns.ts";
import { workloadDefinition } from "./define.ts";

type Obj = Record<string, unknown>;

function objects(v: unknown): Obj[] {
  return Array.isArray(v) ? (v.filter((x) => typeof x === "object" && x !== null) as Obj[]) : [];
}

function shortList(all: string[], none: string): string {
  if (all.length === 0) return none;
  const shown = all.slice(0, 3).join(",");
  return all.length > 3 ? `${shown} + ${all.length - 3} more...` : shown;
}

export const endpointSliceDefinition = workloadDefinition({
  group: "discovery.k8s.io",
  kind: "EndpointSlice",
  plural: "endpointslices",
  namespaced: true,
  status: false,
  generation: true,
  columns: [
    {
      name: "AddressType",
      type: "string",
      priority: 0,
      description: "The type of the addresses.",
      value: (o) => fieldString(o, "addressType"),
    },
    {
      name: "Ports",
      type: "string",
      priority: 0,
      description: "The ports.",
      value: (o) =>
        shortList(
          objects(o.ports).map((p) => (p.port === undefined ? "<unset>" : String(p.port))),
          "<unset>",
        ),
    },
    {
      name: "Endpoints",
      type: "string",
      priority: 0,
      description: "The addresses.",
      value: (o) =>
        shortList(
          objects(o.endpoints).flatMap((e) =>
            Array.isArray(e.addresses) ? e.addresses.map(String) : [],
          ),
          "<unset>",
        ),
    },
  ],
  strategy: {
    default: (obj) => {
      for (const p of objects(obj.ports)) if (p.protocol === undefined) p.protocol = "TCP";
    },
  },
});

function ingressHosts(obj: KubeObject): string {
  const hosts = objects(field(obj, "spec", "rules"))
    .map((r) => String(r.host ?? ""))
    .filter(Boolean);
  return hosts.length ? shortList(hosts, "*") : "*";
}

function ingressAddress(obj: KubeObject): string {
  const ingress = objects(field(obj, "status", "loadBalancer", "ingress"));
  const all = ingress.map((i) => String(i.ip ?? i.hostname ?? "")).filter(Boolean);
  return all.join(",");
}

export const ingressDefinition = workloadDefinition({
  group: "networking.k8s.io",
  kind: "Ingress",
  plural: "ingresses",
  shortNames: ["ing"],
  namespaced: true,
  status: true,
  generation: true,
  columns: [
    {
      name: "Class",
      type: "string",
      priority: 0,
      description: "The ingress class.",
      value: (o) => fieldString(o, "spec", "ingressClassName") || NONE,
    },
    {
      name: "Hosts",
      type: "string",
      priority: 0,
      description: "The hosts served.",
      value: ingressHosts,
    },
    {
      name: "Address",
      type: "string",
      priority: 0,
      description: "Where it is served.",
      value: ingressAddress,
    },
    {
      name: "Ports",
      type: "string",
      priority: 0,
      description: "The ports served.",
      value: (o) => (objects(field(o, "spec", "tls")).length ? "80, 443" : "80"),
    },
  ],
});

export const ingressClassDefinition = workloadDefinition({
  group: "networking.k8s.io",
  kind: "IngressClass",
  plural: "ingressclasses",
  namespaced: false,
  status: false,
  generation: true,
  columns: [
    {
      name: "Controller",
      type: "string",
      priority: 0,
      description: "The controller that serves the class.",
      value: (o) => fieldString(o, "spec", "controller"),
    },
    {
      name: "Parameters",
      type: "string",
      priority: 0,
      description: "The class's parameters.",
      value: (o) => {
        const p = field(o, "spec", "parameters") as Obj | undefined;
        if (!p) return NONE;
        const group = p.apiGroup ? `.${p.apiGroup}` : "";
        return `${p.kind}${group}/${p.name}`;
      },
    },
  ],
});

function intOrNA(v: unknown): string {
  return v === undefined || v === null ? "N/A" : String(v);
}

export const podDisruptionBudgetDefinition = workloadDefinition({
  group: "policy",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  shortNames: ["pdb"],
  namespaced: true,
  status: true,
  generation: true,
  columns: [
    {
      name: "Min Available",
      type: "string",
      priority: 0,
      description: "Pods that must stay available.",
      value: (o) => intOrNA(field(o, "spec", "minAvailable")),
    },
    {
      name: "Max Unavailable",
      type: "string",
      priority: 0,
      description: "Pods that may be unavailable.",
      value: (o) => intOrNA(field(o, "spec", "maxUnavailable")),
    },
    {
      name: "Allowed Disruptions",
      type: "integer",
      priority: 0,
      description: "Disruptions allowed now.",
      value: (o) => count(o, "status", "disruptionsAllowed"),
    },
  ],
});
