/**
 * The admission chain, in Kubernetes' plugin order: NodeRestriction, mutating webhooks, then (after
 * the object is defaulted and validated) ValidatingAdmissionPolicies, then
 * validating webhooks.
 */
import type { KubeObject } from "@setpoint/api";
import type { Registry } from "../../registry/registry.ts";
import type { Admission, AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { admitNode } from "./node-restriction.ts";
import { PolicyAdmission } from "./policy-admission.ts";
import { WebhookAdmission } from "./webhook-admission.ts";

export class AdmissionChain implements Admission {
  readonly #webhooks: WebhookAdmission;
  readonly #policies: PolicyAdmission;

  constructor(registry: Registry, caches: WatchCacheSet) {
    this.#webhooks = new WebhookAdmission(registry, caches);
    this.#policies = new PolicyAdmission(registry, caches);
  }

  mutate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<KubeObject | undefined> {
    admitNode(ctx, attrs);
    return this.#webhooks.mutate(ctx, attrs);
  }

  async validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void> {
    // A delete is admitted here only: NodeRestriction first, as for the other writes.
    if (attrs.operation === "DELETE") admitNode(ctx, attrs);
    await this.#policies.validate(ctx, attrs);
    await this.#webhooks.validate(ctx, attrs);
  }
}
