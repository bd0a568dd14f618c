/**
 * POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token (`kubectl create
 * token`): the body, an authentication.k8s.io/v1 TokenRequest, is decoded,
 * defaulted (expirationSeconds 3600; audiences: the server's), admitted by
 * NodeRestriction when a node asks (bound to a Pod of its own) and validated
 * (expirationSeconds from 10 minutes to 2^32 seconds), the ServiceAccount read
 * from storage (404 if it does not exist), the object a bound token is bound to (a
 * Pod running as that ServiceAccount, or a Secret, in its namespace) looked up as
 * Kubernetes looks it up (404 when absent, 409 when its uid is not the one named), and
 * the answer is 201 with the TokenRequest, its status carrying the token and when
 * it expires (a ServiceAccount being deleted still gets one, as in Kubernetes; the
 * authenticator refuses it). Nothing is stored; dryRun changes nothing since nothing would be
 * written anyway.
 */
import { errors, type KubeObject, nowTimestamp } from "@setpoint/api";
import { invalid } from "../../registry/builtin/causes.ts";
import { nodeIdentity } from "../../registry/builtin/rbac/index.ts";
import { objectKey } from "../../registry/storage-keys.ts";
import { type CreateSubresource, storageVersion } from "../../registry/types.ts";
import { admitNodeTokenRequest, type BoundObjectRef } from "../admission/node-restriction.ts";
import type { BoundObject, NodeRef, ServiceAccountTokens } from "../tokens/index.ts";
import type { RequestScope } from "./context.ts";
import { parseDryRun, parseFieldValidation, readObject } from "./request-body.ts";
import { respondObject } from "./respond.ts";

/** Handles POST on `serviceaccounts/<name>/token`; `scope` addresses the ServiceAccount. */
export async function createServiceAccountToken(
  scope: RequestScope,
  sub: CreateSubresource,
  tokens: ServiceAccountTokens,
): Promise<void> {
  const kind = sub.kind;
  const version = storageVersion(kind);
  const bodyScope: RequestScope = {
    ...scope,
    def: kind,
    version,
    apiVersion: `${kind.group}/${version.name}`,
  };
  const mode = parseFieldValidation(bodyScope, "CreateOptions");
  parseDryRun(bodyScope, "CreateOptions");
  const req = await readObject(bodyScope, mode);
  const name = scope.name ?? "";
  const namespace = scope.namespace ?? "";
  kind.strategy.default?.(req);
  // NodeRestriction, which kube-apiserver's admission runs before the token is made.
  const ref = (req.spec as { boundObjectRef?: BoundObjectRef } | undefined)?.boundObjectRef;
  if (nodeIdentity(scope.user) !== undefined) {
    const pods = podReader(scope);
    await pods.ready();
    admitNodeTokenRequest(scope.user, name, ref, (pod) => pods.get(namespace, pod));
  }
  const causes = kind.strategy.validate?.(req, undefined) ?? [];
  const meta = req.metadata;
  if (meta.name && meta.name !== name) {
    causes.push(
      invalid("metadata.name", meta.name, "must match the service account name if specified"),
    );
  }
  if (meta.namespace && meta.namespace !== namespace) {
    causes.push(
      invalid(
        "metadata.namespace",
        meta.namespace,
        "must match the service account namespace if specified",
      ),
    );
  }
  if (causes.length > 0) throw errors.invalid(kind.names.kind, name, causes, kind.group);

  const account = await scope.store.get();
  const uid = account.metadata.uid;
  if (!uid) throw errors.internal(`serviceaccount ${namespace}/${name} has no uid`);

  const spec = req.spec as {
    audiences?: string[];
    expirationSeconds: number;
    boundObjectRef?: { apiVersion?: string; kind?: string; name?: string; uid?: string };
  };
  const target = spec.boundObjectRef
    ? await boundObject(scope, name, namespace, spec.boundObjectRef)
    : undefined;
  const bound = target?.bound;
  // A Pod-bound token names the Node the Pod is on (Kubernetes' ServiceAccountTokenPodNodeInfo).
  const node = target?.nodeName ? await nodeRef(scope, target.nodeName) : undefined;
  const audiences = spec.audiences?.length ? spec.audiences : [...tokens.audiences];
  const now = new Date();
  const issued = tokens.issue(
    { namespace, name, uid, audiences, ...(bound ? { bound } : {}), ...(node ? { node } : {}) },
    spec.expirationSeconds,
    now,
  );
  const answer: KubeObject = {
    kind: kind.names.kind,
    apiVersion: bodyScope.apiVersion,
    metadata: { name, namespace, creationTimestamp: nowTimestamp(now) },
    spec: {
      ...spec,
      audiences,
      expirationSeconds: spec.expirationSeconds,
      ...(bound ? { boundObjectRef: { ...spec.boundObjectRef, uid: bound.uid } } : {}),
    },
    status: { token: issued.token, expirationTimestamp: nowTimestamp(issued.expires) },
  };
  respondObject(bodyScope, 201, answer);
}

/** Pods as the watch cache has them. */
function podReader(scope: RequestScope): {
  ready(): Promise<void>;
  get(namespace: string, name: string): KubeObject | undefined;
} {
  const def = scope.ctx.registry.get("", "pods");
  const cache = def ? scope.ctx.caches.forDef(def) : undefined;
  return {
    ready: async () => {
      await cache?.ready();
    },
    get: (namespace, name) => {
      const entry = def ? cache?.get(objectKey(def, namespace, name)) : undefined;
      return entry ? (JSON.parse(entry.json) as KubeObject) : undefined;
    },
  };
}

/** The Node named `name` with its uid when the server has it (the name alone otherwise). */
async function nodeRef(scope: RequestScope, name: string): Promise<NodeRef> {
  const def = scope.ctx.registry.get("", "nodes");
  if (!def) return { name };
  const cache = scope.ctx.caches.forDef(def);
  await cache.ready();
  const entry = cache.get(objectKey(def, "", name));
  const uid = entry ? (JSON.parse(entry.json) as KubeObject).metadata.uid : undefined;
  return { name, ...(uid ? { uid } : {}) };
}

/**
 * The Pod or Secret a token is to be bound to, as kube-apiserver checks it, and
 * for a Pod the Node it is scheduled to.
 */
async function boundObject(
  scope: RequestScope,
  account: string,
  namespace: string,
  ref: { apiVersion?: string; kind?: string; name?: string; uid?: string },
): Promise<{ bound: BoundObject; nodeName?: string }> {
  const group = (ref.apiVersion ?? "").includes("/") ? (ref.apiVersion ?? "").split("/")[0] : "";
  const kind = ref.kind ?? "";
  const plural =
    group === "" && kind === "Pod"
      ? "pods"
      : group === "" && kind === "Secret"
        ? "secrets"
        : undefined;
  const def = plural ? scope.ctx.registry.get("", plural) : undefined;
  if (!def || (kind !== "Pod" && kind !== "Secret")) {
    // Go's GroupVersionKind.String(): "GROUP/VERSION, Kind=KIND" (the core group empty).
    const gvk = `${group}/${(ref.apiVersion ?? "").split("/").pop()}, Kind=${kind}`;
    throw errors.badRequest(`cannot bind token to object of type ${gvk}`);
  }
  const name = ref.name ?? "";
  const cache = scope.ctx.caches.forDef(def);
  await cache.ready();
  const entry = cache.get(objectKey(def, namespace, name));
  if (!entry) throw errors.notFound({ group: "", resource: def.names.plural, name });
  const obj = JSON.parse(entry.json) as KubeObject & {
    spec?: { serviceAccountName?: string; nodeName?: string };
  };
  if (kind === "Pod" && (obj.spec?.serviceAccountName ?? "") !== account) {
    throw errors.badRequest(
      `cannot bind token for serviceaccount ${JSON.stringify(account)} to pod running with different serviceaccount name.`,
    );
  }
  const uid = obj.metadata.uid ?? "";
  if (ref.uid && ref.uid !== uid) {
    throw errors.conflict(
      { group: "", resource: kind, name },
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  }
  const nodeName = kind === "Pod" ? obj.spec?.nodeName : undefined;
  return { bound: { kind, name, uid }, ...(nodeName ? { nodeName } : {}) };
}
