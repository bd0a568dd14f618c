/**
 * The webhooks the stored Validating- and MutatingWebhookConfigurations declare,
 * read from the server's watch caches and parsed once per cached state, in the
 * order Kubernetes calls them: configurations by name, then each one's webhooks
 * in order.
 */
import type { KubeObject } from "@setpoint/api";
import { ADMISSION_GROUP, type MatchCondition } from "../../registry/builtin/admission/index.ts";
import type { Registry } from "../../registry/registry.ts";
import type { WatchCache } from "../watchcache/watch-cache.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";

export interface RuleWithOperations {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

export interface MetaLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface WebhookClientConfig {
  url?: string;
  service?: { namespace: string; name: string; path?: string; port?: number };
  caBundle?: string;
}

/** One webhook of a configuration, defaulted as stored. */
export interface Webhook {
  name: string;
  clientConfig: WebhookClientConfig;
  rules?: RuleWithOperations[];
  failurePolicy?: "Fail" | "Ignore";
  matchPolicy?: "Equivalent" | "Exact";
  namespaceSelector?: MetaLabelSelector;
  objectSelector?: MetaLabelSelector;
  sideEffects?: string;
  timeoutSeconds?: number;
  admissionReviewVersions?: string[];
  reinvocationPolicy?: "Never" | "IfNeeded";
  /** CEL conditions that must all hold for the webhook to be called. */
  matchConditions?: MatchCondition[];
}

/** A webhook with the configuration that declares it. */
export interface ConfiguredWebhook {
  configuration: string;
  webhook: Webhook;
}

export type WebhookKind = "validating" | "mutating";

const PLURALS: Record<WebhookKind, string> = {
  validating: "validatingwebhookconfigurations",
  mutating: "mutatingwebhookconfigurations",
};

/** The resources no webhook is called for (so a broken webhook can always be removed). */
export const EXEMPT_RESOURCES: ReadonlySet<string> = new Set([
  "validatingwebhookconfigurations",
  "mutatingwebhookconfigurations",
]);

export class WebhookConfigurations {
  readonly #parsed = new Map<WebhookKind, { rev: number; hooks: ConfiguredWebhook[] }>();

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {}

  #cache(kind: WebhookKind): WatchCache | undefined {
    const def = this.registry.get(ADMISSION_GROUP, PLURALS[kind]);
    return def ? this.caches.forDef(def) : undefined;
  }

  /** The webhooks of `kind`, in calling order, once the cache is primed. */
  async webhooks(kind: WebhookKind): Promise<ConfiguredWebhook[]> {
    const cache = this.#cache(kind);
    if (!cache) return [];
    await cache.ready();
    const known = this.#parsed.get(kind);
    if (known && known.rev === cache.rev) return known.hooks;
    const configs = cache
      .entries()
      .map((e) => JSON.parse(e.json) as KubeObject)
      .sort((a, b) => ((a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1));
    const hooks: ConfiguredWebhook[] = [];
    for (const c of configs) {
      const list = (c as { webhooks?: Webhook[] }).webhooks ?? [];
      for (const webhook of list) hooks.push({ configuration: c.metadata.name ?? "", webhook });
    }
    this.#parsed.set(kind, { rev: cache.rev, hooks });
    return hooks;
  }
}
