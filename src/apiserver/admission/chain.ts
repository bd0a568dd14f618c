/**
 * The admission chain, in Kubernetes' plugin order: NodeRestriction, ServiceAccount
 * (when on), mutating webhooks, then (after
 * the object is defaulted and validated) ValidatingAdmissionPolicies, then
 * validating webhooks.
 */
import type { KubeObject } from "@setpoint/api";
import type { Registry } from "../../registry/registry.ts";
import type { Admission, AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { admitNode } from "./node-restriction.ts";
import { PolicyAdmission } from "./policy-admission.ts";
import { ServiceAccountAdmission } from "./service-account.ts";
import { WebhookAdmission } from "./webhook-admission.ts";

export class AdmissionChain implements Admission {
  readonly #webhooks: WebhookAdmission;
  readonly #policies: PolicyAdmission;
  readonly #serviceAccounts: ServiceAccountAdmission | undefined;

  constructor(registry: Registry, caches: WatchCacheSet, opts: { serviceAccount?: boolean } = {}) {
    this.#webhooks = new WebhookAdmission(registry, caches);
    this.#policies = new PolicyAdmission(registry, caches);
    if (opts.serviceAccount) this.#serviceAccounts = new ServiceAccountAdmission(registry, caches);
  }

  async mutate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<KubeObject | undefined> {
    admitNode(ctx, attrs);
    const admitted = await this.#serviceAccounts?.admit(ctx, attrs);
    const changed = await this.#webhooks.mutate(
      ctx,
      admitted ? { ...attrs, object: admitted } : attrs,
    );
    return changed ?? admitted;
  }

  async validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void> {
    // A delete is admitted here only: NodeRestriction first, as for the other writes.
    if (attrs.operation === "DELETE") admitNode(ctx, attrs);
    await this.#policies.validate(ctx, attrs);
    await this.#webhooks.validate(ctx, attrs);
  }
}
