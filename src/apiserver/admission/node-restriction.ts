/**
 * NodeRestriction admission, as kube-apiserver's plugin of that name: a node
 * (user `system:node:NAME` in `system:nodes`) may write only its own Node (not
 * its taints, nor labels outside the kubelet's own and the `node.kubernetes.io`
 * and `kubelet.kubernetes.io` prefixes, never `node-restriction.kubernetes.io`),
 * its own Lease in kube-node-lease, the status of the Pods bound to it (not their
 * labels), and delete only the Pods bound to it; it may create only mirror Pods
 * bound to itself; it may ask for a ServiceAccount token only bound to a Pod (by
 * name and uid) that runs on it (admitNodeTokenRequest). The Node authorizer
 * allowed the verb; this looks at the objects.
 * The admission chain (chain.ts) runs it first: in the mutating phase, and for
 * deletes in the validating one (where a delete is admitted here).
 */
import { errors, type KubeObject, type StatusError } from "@setpoint/api";
import { nodeIdentity } from "../../registry/builtin/rbac/index.ts";
import type { Requester } from "../../registry/types.ts";
import type { AdmissionAttributes, StoreContext } from "../store/scope.ts";

const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";
const NODE_LEASE_NAMESPACE = "kube-node-lease";

/** The labels a kubelet sets on its Node (Kubernetes' kubeletapis.IsKubeletLabel). */
const KUBELET_LABELS = new Set([
  "kubernetes.io/hostname",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "kubernetes.io/os",
  "kubernetes.io/arch",
]);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io";

type Obj = Record<string, unknown>;
const field = (o: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Obj)[k] : undefined), o);

/** A TokenRequest's `spec.boundObjectRef`. */
export interface BoundObjectRef {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
}

/**
 * NodeRestriction for `serviceaccounts/<account>/token` (kube-apiserver runs it
 * before the token is made): a node's TokenRequest must be bound to a Pod, by name
 * and uid, that is scheduled on the node; a Pod that does not exist is a 404.
 * `getPod` reads a Pod of the account's namespace as the server has it. Others are not looked at.
 */
export function admitNodeTokenRequest(
  user: Requester,
  account: string,
  ref: BoundObjectRef | undefined,
  getPod: (name: string) => KubeObject | undefined,
): void {
  const node = nodeIdentity(user);
  if (node === undefined) return;
  const deny = (message: string): StatusError =>
    errors.forbidden({ group: "", resource: "serviceaccounts", name: account }, message);
  if (node === "") {
    throw deny(`could not determine node from user ${JSON.stringify(user.name)}`);
  }
  if (ref?.apiVersion !== "v1" || ref.kind !== "Pod" || !ref.name) {
    throw deny("node requested token not bound to a pod");
  }
  if (!ref.uid) throw deny("node requested token with a pod binding without a uid");
  const pod = getPod(ref.name);
  if (!pod) throw errors.notFound({ group: "", resource: "pods", name: ref.name });
  if (pod.metadata.uid !== ref.uid) {
    throw deny(
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  }
  if (field(pod, "spec", "nodeName") !== node) {
    throw deny("node requested token bound to a pod scheduled on a different node");
  }
}

/** Throws the 403 NodeRestriction answers, or returns when the write is admitted. */
export function admitNode(ctx: StoreContext, attrs: AdmissionAttributes): void {
  const node = nodeIdentity(ctx.scope.user);
  if (node === undefined) return;
  const name =
    ctx.scope.name ?? attrs.object?.metadata.name ?? attrs.oldObject?.metadata.name ?? "";
  const deny = (message: string): StatusError =>
    errors.forbidden({ group: ctx.def.group, resource: ctx.def.names.plural, name }, message);
  if (node === "") {
    throw deny(`could not determine node from user ${JSON.stringify(ctx.scope.user.name)}`);
  }
  const q = JSON.stringify;
  const group = ctx.def.group;
  const resource = ctx.def.names.plural;
  const sub = ctx.scope.subresource ?? "";
  const op = attrs.operation;
  if (group === "" && resource === "pods") {
    if (sub === "status") {
      if (op !== "UPDATE") throw deny(`unexpected operation ${q(op)}`);
      if (field(attrs.oldObject, "spec", "nodeName") !== node) {
        throw deny(
          `node ${q(node)} can only update pod status for pods with spec.nodeName set to itself`,
        );
      }
      if (!sameLabels(attrs.oldObject?.metadata.labels, attrs.object?.metadata.labels)) {
        throw deny(`node ${q(node)} cannot update labels through pod status`);
      }
      return;
    }
    if (sub === "eviction") return;
    if (sub !== "") {
      throw deny(`unexpected pod subresource ${q(sub)}, only 'status' and 'eviction' are allowed`);
    }
    if (op === "DELETE") {
      if (field(attrs.oldObject, "spec", "nodeName") !== node) {
        throw deny(`node ${q(node)} can only delete pods with spec.nodeName set to itself`);
      }
      return;
    }
    if (op === "CREATE") {
      const pod = attrs.object;
      if (pod?.metadata.annotations?.[MIRROR_POD_ANNOTATION] === undefined) {
        throw deny(
          `pod does not have ${q(MIRROR_POD_ANNOTATION)} annotation, node ${q(node)} can only create mirror pods`,
        );
      }
      if (field(pod, "spec", "nodeName") !== node) {
        throw deny(`node ${q(node)} can only create pods with spec.nodeName set to itself`);
      }
      return;
    }
    throw deny(
      `unexpected operation ${q(op)}, node ${q(node)} can only create and delete mirror pods`,
    );
  }
  if (group === "" && resource === "nodes") {
    if (name !== node) throw deny(`node ${q(node)} is not allowed to modify node ${q(name)}`);
    const obj = attrs.object;
    if (op === "CREATE" && obj) {
      if (field(obj, "spec", "configSource") != null) {
        throw deny(`node ${q(node)} is not allowed to create pods with a non-nil configSource`);
      }
      const forbidden = forbiddenLabels(modifiedLabels(obj.metadata.labels, undefined));
      if (forbidden.length > 0) {
        throw deny(
          `node ${q(node)} is not allowed to set the following labels: ${forbidden.join(", ")}`,
        );
      }
    }
    if (op === "UPDATE" && obj && attrs.oldObject) {
      const old = attrs.oldObject;
      const source = field(obj, "spec", "configSource");
      if (source != null && !sameJson(source, field(old, "spec", "configSource"))) {
        throw deny(
          `node ${q(node)} is not allowed to update configSource to a new non-nil configSource`,
        );
      }
      if (!sameJson(taints(obj), taints(old))) {
        throw deny(`node ${q(node)} is not allowed to modify taints`);
      }
      const forbidden = forbiddenLabels(modifiedLabels(obj.metadata.labels, old.metadata.labels));
      if (forbidden.length > 0) {
        throw deny(`is not allowed to modify labels: ${forbidden.join(", ")}`);
      }
    }
    return;
  }
  if (group === "coordination.k8s.io" && resource === "leases") {
    if (ctx.scope.namespace !== NODE_LEASE_NAMESPACE) {
      throw deny(`can only access leases in the ${q(NODE_LEASE_NAMESPACE)} system namespace`);
    }
    if (name !== node) {
      throw deny("can only access node lease with the same name as the requesting node");
    }
    return;
  }
  if (group === "" && resource === "persistentvolumeclaims" && sub !== "status") {
    throw deny("may only update PVC status");
  }
}

function taints(node: KubeObject): unknown {
  const t = field(node, "spec", "taints");
  return Array.isArray(t) && t.length > 0 ? t : undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function sameLabels(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): boolean {
  return modifiedLabels(a, b).length === 0;
}

/** The keys whose values differ between two label sets. */
function modifiedLabels(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): string[] {
  const out = new Set<string>();
  for (const [k, v] of Object.entries(a ?? {})) if (b?.[k] !== v) out.add(k);
  for (const [k, v] of Object.entries(b ?? {})) if (a?.[k] !== v) out.add(k);
  return [...out];
}

/** Of `keys`, those a node may not set, sorted (Kubernetes' getForbiddenLabels). */
function forbiddenLabels(keys: string[]): string[] {
  const out = keys.filter((key) => {
    const slash = key.indexOf("/");
    const ns = slash >= 0 ? key.slice(0, slash) : "";
    if (ns === NODE_RESTRICTION_NAMESPACE || ns.endsWith(`.${NODE_RESTRICTION_NAMESPACE}`)) {
      return true;
    }
    const isKubernetes =
      ns === "kubernetes.io" ||
      ns.endsWith(".kubernetes.io") ||
      ns === "k8s.io" ||
      ns.endsWith(".k8s.io");
    return isKubernetes && !isKubeletLabel(key, ns);
  });
  return out.sort();
}

function isKubeletLabel(key: string, ns: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  return KUBELET_LABEL_NAMESPACES.some((n) => ns === n || ns.endsWith(`.${n}`));
}
