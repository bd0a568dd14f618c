/**
 * The Node authorizer, as kube-apiserver's `--authorization-mode=Node`: a request
 * from a node (user `system:node:NAME` in group `system:nodes`) may read only the
 * Secrets, ConfigMaps, PersistentVolumeClaims and Pods that relate to its node, mint
 * tokens only for the ServiceAccounts its Pods run as, read only its own Node, touch
 * only its own Lease in kube-node-lease, and otherwise do what the `system:node`
 * rules allow (NODE_RULES; NodeRestriction admission narrows the writes). Kubernetes
 * keeps a graph of these relations; here the Pods in the watch cache, indexed by
 * spec.nodeName and by what they reference, are the graph, rebuilt from the cache
 * when a node asks after Pods changed (an entry parsed once while it stays).
 *
 * It allows or has no opinion (the next authorizer, RBAC, decides); its reason for
 * having none is what the 403 says after the RBAC words.
 */
import type { KubeObject } from "@setpoint/api";
import {
  type AccessAttributes,
  type AccessUser,
  NODE_RULES,
  nodeIdentity,
  ruleAllows,
} from "../../registry/builtin/rbac/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { CacheEntry, WatchCache } from "../watchcache/watch-cache.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";

/** The namespace of the nodes' Leases. */
const NODE_LEASE_NAMESPACE = "kube-node-lease";

export interface NodeDecision {
  allowed: boolean;
  /** Why it had no opinion ("" when allowed or with no reason to give). */
  reason: string;
}

/** What a Pod references, by kind: "ns/name" keys. */
interface PodRefs {
  node: string;
  secrets: string[];
  configmaps: string[];
  pvcs: string[];
  serviceaccount: string;
}

/** The relations of every bound Pod: which nodes each object is related to. */
interface Graph {
  key: string;
  /** `kind/ns/name` → node names (kinds: pods, secrets, configmaps, persistentvolumeclaims, serviceaccounts). */
  nodesOf: Map<string, Set<string>>;
}

const parsedRefs = new WeakMap<CacheEntry, PodRefs>();

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === "object" ? (v as Obj) : {});
const asList = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(asObj) : []);
const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** What a Pod references (Kubernetes' VisitPodSecretNames / VisitPodConfigmapNames, volumes, claims). */
function podRefs(pod: KubeObject, node: string): PodRefs {
  const ns = pod.metadata.namespace ?? "";
  const spec = asObj((pod as Obj).spec);
  const secrets = new Set<string>();
  const configmaps = new Set<string>();
  const pvcs = new Set<string>();
  const add = (set: Set<string>, name: string) => {
    if (name) set.add(`${ns}/${name}`);
  };
  for (const s of asList(spec.imagePullSecrets)) add(secrets, str(s.name));
  const containers = [
    ...asList(spec.initContainers),
    ...asList(spec.containers),
    ...asList(spec.ephemeralContainers),
  ];
  for (const c of containers) {
    for (const from of asList(c.envFrom)) {
      add(secrets, str(asObj(from.secretRef).name));
      add(configmaps, str(asObj(from.configMapRef).name));
    }
    for (const env of asList(c.env)) {
      const vf = asObj(env.valueFrom);
      add(secrets, str(asObj(vf.secretKeyRef).name));
      add(configmaps, str(asObj(vf.configMapKeyRef).name));
    }
  }
  for (const v of asList(spec.volumes)) {
    add(secrets, str(asObj(v.secret).secretName));
    add(configmaps, str(asObj(v.configMap).name));
    add(pvcs, str(asObj(v.persistentVolumeClaim).claimName));
    if (v.ephemeral) add(pvcs, `${pod.metadata.name ?? ""}-${str(v.name)}`);
    for (const src of asList(asObj(v.projected).sources)) {
      add(secrets, str(asObj(src.secret).name));
      add(configmaps, str(asObj(src.configMap).name));
    }
    // Volume plugins that name a secret of their own.
    for (const plugin of [
      "azureFile",
      "cephfs",
      "cinder",
      "flexVolume",
      "iscsi",
      "rbd",
      "scaleIO",
      "storageos",
      "csi",
    ]) {
      const p = asObj(v[plugin]);
      add(
        secrets,
        str(p.secretName) ||
          str(asObj(p.secretRef).name) ||
          str(asObj(p.nodePublishSecretRef).name),
      );
    }
  }
  const sa = str(spec.serviceAccountName);
  return {
    node,
    secrets: [...secrets],
    configmaps: [...configmaps],
    pvcs: [...pvcs],
    serviceaccount: sa ? `${ns}/${sa}` : "",
  };
}

/** The Node authorizer over the server's watch caches. */
export class NodeAuthorizer {
  #graph: Graph | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {}

  #pods(): WatchCache | undefined {
    const def = this.registry.get("", "pods");
    return def ? this.caches.forDef(def) : undefined;
  }

  /** Waits until the Pods' cache is primed (a node is never refused on half a graph). */
  async ready(): Promise<void> {
    await this.#pods()?.ready();
  }

  #current(): Graph {
    const pods = this.#pods();
    const key = `${pods?.rev ?? -1}:${pods?.isReady ? 1 : 0}`;
    if (this.#graph?.key === key) return this.#graph;
    const nodesOf = new Map<string, Set<string>>();
    const relate = (k: string, node: string) => {
      const set = nodesOf.get(k);
      if (set) set.add(node);
      else nodesOf.set(k, new Set([node]));
    };
    for (const entry of pods?.isReady ? pods.entries() : []) {
      const node = entry.fields?.["spec.nodeName"] ?? "";
      if (!node) continue;
      let refs = parsedRefs.get(entry);
      if (!refs || refs.node !== node) {
        refs = podRefs(JSON.parse(entry.json) as KubeObject, node);
        parsedRefs.set(entry, refs);
      }
      relate(`pods/${entry.namespace}/${entry.name}`, node);
      for (const s of refs.secrets) relate(`secrets/${s}`, node);
      for (const c of refs.configmaps) relate(`configmaps/${c}`, node);
      for (const p of refs.pvcs) relate(`persistentvolumeclaims/${p}`, node);
      if (refs.serviceaccount) relate(`serviceaccounts/${refs.serviceaccount}`, node);
    }
    this.#graph = { key, nodesOf };
    return this.#graph;
  }

  /** The decision for a node; undefined when `user` is not a node (no opinion, no reason). */
  authorize(user: AccessUser, attrs: AccessAttributes): NodeDecision | undefined {
    const node = nodeIdentity(user);
    if (node === undefined) return undefined;
    if (node === "")
      return { allowed: false, reason: `unknown node for user ${JSON.stringify(user.name)}` };
    const r = attrs.resource;
    if (r) {
      const name = r.name ?? nameFromFieldSelector(attrs);
      const at = { ...r, ...(name ? { name } : {}) };
      if (r.group === "") {
        switch (r.resource) {
          case "secrets":
          case "configmaps":
            return this.#readNamespaced(node, attrs.verb, at);
          case "persistentvolumeclaims":
            if (r.subresource === "status") return this.#statusUpdate(node, attrs.verb, at);
            return this.#get(node, attrs.verb, at);
          case "serviceaccounts":
            return this.#createToken(node, attrs.verb, at);
          case "nodes":
            return this.#node(node, attrs, at);
          case "pods":
            return this.#pod(node, attrs, at);
        }
      } else if (r.group === "coordination.k8s.io" && r.resource === "leases") {
        return this.#lease(node, attrs.verb, at);
      }
    }
    return this.#static(attrs);
  }

  #static(attrs: AccessAttributes): NodeDecision {
    return { allowed: NODE_RULES.some((rule) => ruleAllows(rule, attrs)), reason: "" };
  }

  #related(node: string, kind: string, r: Resource): NodeDecision {
    if (!r.name) return { allowed: false, reason: "No Object name found" };
    const nodes = this.#current().nodesOf.get(`${kind}/${r.namespace ?? ""}/${r.name}`);
    if (nodes?.has(node)) return { allowed: true, reason: "" };
    return {
      allowed: false,
      reason: `no relationship found between node '${node}' and this object`,
    };
  }

  #readNamespaced(node: string, verb: string, r: Resource): NodeDecision {
    if (verb !== "get" && verb !== "list" && verb !== "watch") {
      return { allowed: false, reason: "can only read resources of this type" };
    }
    if (r.subresource) return { allowed: false, reason: "cannot read subresource" };
    if (!r.namespace)
      return { allowed: false, reason: "can only read namespaced object of this type" };
    return this.#related(node, r.resource, r);
  }

  #get(node: string, verb: string, r: Resource): NodeDecision {
    if (verb !== "get")
      return { allowed: false, reason: "can only get individual resources of this type" };
    if (r.subresource) return { allowed: false, reason: "cannot get subresource" };
    return this.#related(node, r.resource, r);
  }

  #statusUpdate(node: string, verb: string, r: Resource): NodeDecision {
    if (verb !== "update" && verb !== "patch") {
      return { allowed: false, reason: "can only get/update/patch this type" };
    }
    return this.#related(node, r.resource, r);
  }

  #createToken(node: string, verb: string, r: Resource): NodeDecision {
    if (verb !== "create" || !r.name) {
      return { allowed: false, reason: "can only create tokens for individual service accounts" };
    }
    if (r.subresource !== "token") {
      return { allowed: false, reason: "can only create token subresource of serviceaccount" };
    }
    return this.#related(node, "serviceaccounts", r);
  }

  #lease(node: string, verb: string, r: Resource): NodeDecision {
    if (!["get", "create", "update", "patch", "delete"].includes(verb)) {
      return {
        allowed: false,
        reason: "can only get, create, update, patch, or delete a node lease",
      };
    }
    if (r.namespace !== NODE_LEASE_NAMESPACE) {
      return {
        allowed: false,
        reason: `can only access leases in the ${JSON.stringify(NODE_LEASE_NAMESPACE)} system namespace`,
      };
    }
    // A create's name is not known here: NodeRestriction checks it.
    if (verb !== "create" && r.name !== node) {
      return {
        allowed: false,
        reason: "can only access node lease with the same name as the requesting node",
      };
    }
    return { allowed: true, reason: "" };
  }

  /** Nodes (AuthorizeNodeWithSelectors, on by default in 1.32): reads of its own Node only. */
  #node(node: string, attrs: AccessAttributes, r: Resource): NodeDecision {
    if (attrs.verb === "get" || attrs.verb === "list" || attrs.verb === "watch") {
      if (r.name === node) return { allowed: true, reason: "" };
      if (!r.name) {
        return {
          allowed: false,
          reason: `node '${node}' cannot read all nodes, only its own Node object`,
        };
      }
      return {
        allowed: false,
        reason: `node '${node}' cannot read '${r.name}', only its own Node object`,
      };
    }
    return this.#static(attrs);
  }

  /** Pods (AuthorizeNodeWithSelectors): its own Pods, listed by spec.nodeName. */
  #pod(node: string, attrs: AccessAttributes, r: Resource): NodeDecision {
    switch (attrs.verb) {
      case "get":
        return this.#get(node, "get", r);
      case "list":
      case "watch": {
        const sel = fieldRequirements(attrs.fieldSelector);
        if (sel.some((q) => q.field === "spec.nodeName" && q.op === "=" && q.value === node)) {
          return { allowed: true, reason: "" };
        }
        if (r.name) return this.#get(node, "get", r);
        return {
          allowed: false,
          reason: "can only list/watch pods with spec.nodeName field selector",
        };
      }
      default:
        return this.#static(attrs);
    }
  }
}

type Resource = NonNullable<AccessAttributes["resource"]>;

interface FieldRequirement {
  field: string;
  op: "=" | "!=";
  value: string;
}

/** A field selector's requirements (`a=b,c!=d`; `==` is `=`). */
function fieldRequirements(selector: string | undefined): FieldRequirement[] {
  if (!selector) return [];
  const out: FieldRequirement[] = [];
  for (const part of selector.split(",")) {
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/.exec(part.trim());
    if (m) out.push({ field: m[1]!, op: m[2] === "!=" ? "!=" : "=", value: m[3]! });
  }
  return out;
}

/** A list's or watch's single name from `metadata.name=` (as Kubernetes' request info sets it). */
function nameFromFieldSelector(attrs: AccessAttributes): string | undefined {
  if (attrs.verb !== "list" && attrs.verb !== "watch") return undefined;
  const q = fieldRequirements(attrs.fieldSelector).find(
    (x) => x.field === "metadata.name" && x.op === "=",
  );
  return q?.value || undefined;
}
