/**
 * The apiserver's authorizer: Node, then RBAC, as kube-apiserver's
 * `--authorization-mode=Node,RBAC`. The first to allow decides; when none does,
 * the Node authorizer's reason (a node asking for what is not its own) is the
 * denial's reason, said after the RBAC words in the 403.
 */
import type { AccessAttributes, PolicyRule, RoleRef } from "../../registry/builtin/rbac/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { Authorizer, Requester } from "../../registry/types.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { NodeAuthorizer } from "./node-authorizer.ts";
import { RbacAuthorizer } from "./rbac-authorizer.ts";

export class ApiAuthorizer implements Authorizer {
  readonly node: NodeAuthorizer;
  readonly rbac: RbacAuthorizer;

  constructor(registry: Registry, caches: WatchCacheSet) {
    this.node = new NodeAuthorizer(registry, caches);
    this.rbac = new RbacAuthorizer(registry, caches);
  }

  /** Waits until the caches both read are primed. */
  async ready(): Promise<void> {
    await Promise.all([this.rbac.ready(), this.node.ready()]);
  }

  authorize(user: Requester, attrs: AccessAttributes): { allowed: boolean; reason: string } {
    const byNode = this.node.authorize(user, attrs);
    if (byNode?.allowed) return { allowed: true, reason: "" };
    const byRbac = this.rbac.authorize(user, attrs);
    if (byRbac.allowed) return byRbac;
    return { allowed: false, reason: byNode?.reason ?? "" };
  }

  rulesFor(user: Requester, namespace: string): PolicyRule[] {
    return this.rbac.rulesFor(user, namespace);
  }

  roleRules(namespace: string, ref: RoleRef): PolicyRule[] | undefined {
    return this.rbac.roleRules(namespace, ref);
  }
}
