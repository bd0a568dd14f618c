/**
 * The admission chain, in Kubernetes' plugin order: mutating webhooks, then (after
 * the object is defaulted and validated) ValidatingAdmissionPolicies, then
 * validating webhooks.
 */
import type { KubeObject } from "@setpoint/api";
import type { Registry } from "../../registry/registry.ts";
import type { Admission, AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
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
    return this.#webhooks.mutate(ctx, attrs);
  }

  async validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void> {
    await this.#policies.validate(ctx, attrs);
    await this.#webhooks.validate(ctx, attrs);
  }
}
