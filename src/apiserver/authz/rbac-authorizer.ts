/**
 * The RBAC authorizer: answers whether a user may do what a request asks, from the
 * Roles, ClusterRoles, RoleBindings and ClusterRoleBindings the watch caches hold
 * (no storage read on the request path). Members of system:masters may do
 * anything, as in Kubernetes. The bindings are indexed by subject once per change
 * of the caches, so a request looks only at the bindings that name its user.
 */
import type { KubeObject } from "@setpoint/api";
import {
  type AccessAttributes,
  MASTERS,
  type PolicyRule,
  RBAC_GROUP,
  type RoleRef,
  ruleAllows,
  type Subject,
  subjectMatches,
  withImplicitGroups,
} from "../../registry/builtin/rbac/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { Authorizer, Requester } from "../../registry/types.ts";
import type { WatchCache } from "../watchcache/watch-cache.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";

interface Binding {
  kind: "RoleBinding" | "ClusterRoleBinding";
  name: string;
  /** "" for a ClusterRoleBinding. */
  namespace: string;
  subjects: Subject[];
  roleRef: RoleRef;
}

interface Snapshot {
  /** The caches it was made from, and each one's revision and readiness then. */
  from: readonly { cache: WatchCache | undefined; rev: number; ready: boolean }[];
  roles: Map<string, PolicyRule[]>;
  clusterRoles: Map<string, PolicyRule[]>;
  bindings: Binding[];
  /** Indices into `bindings` by the subject they name: `u:NAME` for users (a ServiceAccount is its user name), `g:NAME` for groups. */
  bySubject: Map<string, number[]>;
}

/** The index key a subject is found under (see Snapshot.bySubject). */
function subjectKey(s: Subject): string | undefined {
  switch (s.kind) {
    case "User":
      return `u:${s.name}`;
    case "Group":
      return `g:${s.name}`;
    case "ServiceAccount":
      return `u:system:serviceaccount:${s.namespace ?? ""}:${s.name}`;
    default:
      return undefined;
  }
}

const KINDS = ["roles", "clusterroles", "rolebindings", "clusterrolebindings"] as const;

function parse(json: string): KubeObject | undefined {
  try {
    return JSON.parse(json) as KubeObject;
  } catch {
    return undefined;
  }
}

function rulesOf(obj: KubeObject): PolicyRule[] {
  const r = (obj as { rules?: unknown }).rules;
  return Array.isArray(r) ? (r as PolicyRule[]) : [];
}

/** The RBAC authorizer over the server's watch caches. */
export class RbacAuthorizer implements Authorizer {
  #snapshot: Snapshot | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {}

  /** Waits until the RBAC kinds' caches are primed (a request is never decided on half a policy). */
  async ready(): Promise<void> {
    await Promise.all(this.#caches().map((c) => c?.ready()));
  }

  #caches(): (WatchCache | undefined)[] {
    return KINDS.map((plural) => {
      const def = this.registry.get(RBAC_GROUP, plural);
      return def ? this.caches.forDef(def) : undefined;
    });
  }

  #current(): Snapshot {
    const caches = this.#caches();
    const last = this.#snapshot;
    const unchanged = (f: Snapshot["from"][number], i: number): boolean => {
      const c = caches[i];
      return f.cache === c && f.rev === (c?.rev ?? -1) && f.ready === (c?.isReady === true);
    };
    if (last?.from.every(unchanged)) return last;
    const from = caches.map((c) => ({ cache: c, rev: c?.rev ?? -1, ready: c?.isReady === true }));
    const [roles, clusterRoles, roleBindings, clusterRoleBindings] = caches.map((c) =>
      (c?.isReady ? c.entries() : []).map((e) => parse(e.json)).filter((o) => o !== undefined),
    ) as KubeObject[][];
    const byName = (list: KubeObject[], namespaced: boolean) =>
      new Map(
        list.map((o) => [
          namespaced ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ""),
          rulesOf(o),
        ]),
      );
    const bindings: Binding[] = [...roleBindings, ...clusterRoleBindings].map((o) => ({
      kind: o.kind === "ClusterRoleBinding" ? "ClusterRoleBinding" : "RoleBinding",
      name: o.metadata.name ?? "",
      namespace: o.kind === "ClusterRoleBinding" ? "" : (o.metadata.namespace ?? ""),
      subjects: ((o as { subjects?: Subject[] }).subjects ?? []).map((s) => ({
        ...s,
        // A RoleBinding's service account without a namespace is in the binding's.
        ...(s.kind === "ServiceAccount" && !s.namespace && o.kind === "RoleBinding"
          ? { namespace: o.metadata.namespace ?? "" }
          : {}),
      })),
      roleRef: (o as unknown as { roleRef: RoleRef }).roleRef,
    }));
    const bySubject = new Map<string, number[]>();
    bindings.forEach((b, i) => {
      for (const sub of b.subjects) {
        const k = subjectKey(sub);
        if (k === undefined) continue;
        const list = bySubject.get(k);
        if (!list) bySubject.set(k, [i]);
        else if (list[list.length - 1] !== i) list.push(i);
      }
    });
    this.#snapshot = {
      from,
      roles: byName(roles, true),
      clusterRoles: byName(clusterRoles, false),
      bindings,
      bySubject,
    };
    return this.#snapshot;
  }

  #rulesOfRef(s: Snapshot, namespace: string, ref: RoleRef): PolicyRule[] | undefined {
    if (ref.kind === "ClusterRole") return s.clusterRoles.get(ref.name);
    if (ref.kind === "Role") return s.roles.get(`${namespace}/${ref.name}`);
    return undefined;
  }

  /** The bindings that apply to `user` for a request in `namespace` ("" cluster-wide). */
  /** The bindings that apply, in stored order, found through the subject index. */
  *#applicable(s: Snapshot, user: Requester, namespace: string): Generator<Binding> {
    const u = withImplicitGroups(user);
    const found = new Set<number>(s.bySubject.get(`u:${u.name}`));
    for (const g of u.groups) for (const i of s.bySubject.get(`g:${g}`) ?? []) found.add(i);
    const order = found.size > 1 ? [...found].sort((a, b) => a - b) : [...found];
    for (const i of order) {
      const b = s.bindings[i]!;
      if (b.kind === "RoleBinding" && b.namespace !== namespace) continue;
      if (b.subjects.some((sub) => subjectMatches(sub, u))) yield b;
    }
  }

  authorize(user: Requester, attrs: AccessAttributes): { allowed: boolean; reason: string } {
    if (user.groups.includes(MASTERS)) return { allowed: true, reason: "" };
    const s = this.#current();
    const namespace = attrs.resource?.namespace ?? "";
    for (const b of this.#applicable(s, user, namespace)) {
      const rules = this.#rulesOfRef(s, b.namespace, b.roleRef) ?? [];
      if (rules.some((r) => ruleAllows(r, attrs))) {
        const where =
          b.kind === "RoleBinding" ? ` in namespace ${JSON.stringify(b.namespace)}` : "";
        return {
          allowed: true,
          reason: `RBAC: allowed by ${b.kind} ${JSON.stringify(`${b.name}${b.namespace ? `/${b.namespace}` : ""}`)} of ${b.roleRef.kind} ${JSON.stringify(b.roleRef.name)} to ${describeSubject(b, user)}${where}`,
        };
      }
    }
    return { allowed: false, reason: "" };
  }

  rulesFor(user: Requester, namespace: string): PolicyRule[] {
    if (user.groups.includes(MASTERS)) {
      return [
        { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
        { verbs: ["*"], nonResourceURLs: ["*"] },
      ];
    }
    const s = this.#current();
    const out: PolicyRule[] = [];
    for (const b of this.#applicable(s, user, namespace)) {
      out.push(...(this.#rulesOfRef(s, b.namespace, b.roleRef) ?? []));
    }
    return out;
  }

  roleRules(namespace: string, ref: RoleRef): PolicyRule[] | undefined {
    return this.#rulesOfRef(this.#current(), namespace, ref);
  }
}

function describeSubject(b: Binding, user: Requester): string {
  const u = withImplicitGroups(user);
  const sub = b.subjects.find((s) => subjectMatches(s, u));
  if (!sub) return "";
  if (sub.kind === "ServiceAccount")
    return `ServiceAccount ${JSON.stringify(`${sub.name}/${sub.namespace ?? ""}`)}`;
  return `${sub.kind} ${JSON.stringify(sub.name)}`;
}
