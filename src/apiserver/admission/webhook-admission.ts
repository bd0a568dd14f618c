/**
 * Admission webhooks, as Kubernetes' admission chain calls them on every write:
 * mutating webhooks one after another (each sees what the previous made; a
 * webhook with reinvocationPolicy IfNeeded is called once more when a later one
 * changed the object), then, after the object is defaulted and validated,
 * validating webhooks all at once. A webhook that refuses fails the request with
 * its status ("admission webhook "NAME" denied the request: ..."); one that cannot
 * be called fails it with 500 under failurePolicy Fail and is skipped under
 * Ignore. Warnings reach the client. Nothing here is called for the webhook
 * configurations themselves, so a broken webhook can always be removed.
 */
import { randomUUID } from "node:crypto";
import { applyJsonPatch, errors, type KubeObject, type Status, StatusError } from "@setpoint/api";
import { evaluateMatchConditions } from "../../registry/builtin/admission/index.ts";
import type { Registry } from "../../registry/registry.ts";
import { objectKey } from "../../registry/storage-keys.ts";
import type { Admission, AdmissionAttributes, StoreContext } from "../store/scope.ts";
import type { WatchCacheSet } from "../watchcache/watch-caches.ts";
import { convertToVersion } from "../wire/codec.ts";
import {
  type ConfiguredWebhook,
  EXEMPT_RESOURCES,
  type Webhook,
  WebhookConfigurations,
} from "./configurations.ts";
import {
  type MatchAttributes,
  matchingVersion,
  namespaceMatches,
  objectMatches,
} from "./matching.ts";
import { admissionRequest } from "./request.ts";
import { CallError, callWebhook, type WebhookTarget, withTimeout } from "./webhook-client.ts";

/** The AdmissionReview versions this server speaks, in its order of preference. */
const REVIEW_VERSIONS = ["v1", "v1beta1"];

interface ReviewResponse {
  uid?: string;
  allowed?: boolean;
  status?: Partial<Status>;
  patch?: string;
  patchType?: string;
  warnings?: string[];
}

/** Kubernetes' error for a webhook that refused (webhookerrors.ToStatusErr). */
function deniedError(name: string, result: Partial<Status> | undefined): StatusError {
  const by = `admission webhook ${JSON.stringify(name)} denied the request`;
  const code = typeof result?.code === "number" && result.code >= 400 ? result.code : 400;
  const message = result?.message
    ? `${by}: ${result.message}`
    : result?.reason
      ? `${by}: ${result.reason}`
      : `${by} without explanation`;
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    code,
    ...(result?.reason ? { reason: result.reason } : {}),
    ...(result?.details ? { details: result.details } : {}),
  };
  return new StatusError(status);
}

function callFailed(name: string, why: string): StatusError {
  return errors.internal(`failed calling webhook ${JSON.stringify(name)}: ${why}`);
}

export class WebhookAdmission implements Admission {
  readonly #configs: WebhookConfigurations;

  constructor(
    private readonly registry: Registry,
    private readonly caches: WatchCacheSet,
  ) {
    this.#configs = new WebhookConfigurations(registry, caches);
  }

  async mutate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<KubeObject | undefined> {
    if (!attrs.object || this.#exempt(ctx)) return undefined;
    const hooks = await this.#configs.webhooks("mutating");
    if (hooks.length === 0) return undefined;
    let obj = attrs.object;
    let changed = false;
    /** Index of each called IfNeeded webhook, and the last index that changed the object. */
    const reinvocable: number[] = [];
    let lastChange = -1;
    const run = async (i: number): Promise<void> => {
      const hook = hooks[i]!;
      const patched = await this.#mutateOne(ctx, { ...attrs, object: obj }, hook);
      if (patched === null) return;
      if (hook.webhook.reinvocationPolicy === "IfNeeded") reinvocable.push(i);
      if (patched !== undefined) {
        obj = patched;
        changed = true;
        lastChange = i;
      }
    };
    for (let i = 0; i < hooks.length; i++) await run(i);
    // Once more for IfNeeded webhooks that ran before the object last changed.
    const again = reinvocable.filter((i) => i < lastChange);
    for (const i of again) await run(i);
    return changed ? obj : undefined;
  }

  async validate(ctx: StoreContext, attrs: AdmissionAttributes): Promise<void> {
    if (this.#exempt(ctx)) return;
    const hooks = await this.#configs.webhooks("validating");
    if (hooks.length === 0) return;
    const results = await Promise.allSettled(
      hooks.map(async (hook) => {
        const match = await this.#match(ctx, attrs, hook.webhook);
        if (match === undefined) return;
        const response = await this.#call(ctx, attrs, hook, match);
        if (response && response.allowed !== true)
          throw deniedError(hook.webhook.name, response.status);
      }),
    );
    for (const r of results) if (r.status === "rejected") throw r.reason;
  }

  #exempt(ctx: StoreContext): boolean {
    return (
      ctx.def.group === "admissionregistration.k8s.io" && EXEMPT_RESOURCES.has(ctx.def.names.plural)
    );
  }

  /**
   * One mutating webhook: the changed object (storage version), undefined when it
   * allowed the object as it was, null when it was not called.
   */
  async #mutateOne(
    ctx: StoreContext,
    attrs: AdmissionAttributes,
    hook: ConfiguredWebhook,
  ): Promise<KubeObject | undefined | null> {
    const version = await this.#match(ctx, attrs, hook.webhook);
    if (version === undefined) return null;
    const response = await this.#call(ctx, attrs, hook, version);
    if (!response) return null;
    if (response.allowed !== true) throw deniedError(hook.webhook.name, response.status);
    if (!response.patch) return undefined;
    if (response.patchType !== "JSONPatch") {
      throw callFailed(
        hook.webhook.name,
        `unsupported patch type ${JSON.stringify(response.patchType ?? "")}`,
      );
    }
    let ops: unknown;
    try {
      ops = JSON.parse(Buffer.from(response.patch, "base64").toString("utf8"));
    } catch (err) {
      throw callFailed(hook.webhook.name, `failed to decode the patch: ${(err as Error).message}`);
    }
    const sent = convertToVersion(attrs.object!, ctx.def, version);
    let patched: KubeObject;
    try {
      patched = applyJsonPatch(sent, ops) as KubeObject;
    } catch (err) {
      throw errors.internal(
        `admission webhook ${JSON.stringify(hook.webhook.name)} returned a patch that does not apply: ${(err as Error).message}`,
      );
    }
    const { name, namespace } = attrs.object!.metadata;
    if (patched.metadata?.name !== name || patched.metadata?.namespace !== namespace) {
      throw errors.internal(
        `admission webhook ${JSON.stringify(hook.webhook.name)} changed the object's name or namespace`,
      );
    }
    return convertToVersion(patched, ctx.def, storageVersionOf(ctx));
  }

  /** The version a webhook is sent, or undefined when it is not called for this write. */
  async #match(
    ctx: StoreContext,
    attrs: AdmissionAttributes,
    w: Webhook,
  ): Promise<string | undefined> {
    const a: MatchAttributes = {
      operation: attrs.operation,
      def: ctx.def,
      version: ctx.version.name,
      subresource: ctx.scope.subresource ?? "",
      namespace: ctx.scope.namespace ?? "",
      ...(attrs.object ? { objectLabels: attrs.object.metadata.labels ?? {} } : {}),
      ...(attrs.oldObject ? { oldObjectLabels: attrs.oldObject.metadata.labels ?? {} } : {}),
    };
    const version = matchingVersion(w, a);
    if (version === undefined) return undefined;
    if (!objectMatches(w, a)) return undefined;
    if (ctx.def.namespaced && a.namespace)
      a.namespaceLabels = await this.#namespaceLabels(a.namespace);
    if (!namespaceMatches(w, a)) return undefined;
    if (!w.matchConditions?.length) return version;
    const request = admissionRequest(ctx, attrs, version, "");
    const verdict = evaluateMatchConditions(w.matchConditions, {
      object: request.object,
      oldObject: request.oldObject,
      request,
    });
    if ("error" in verdict) {
      if (w.failurePolicy === "Ignore") return undefined;
      throw callFailed(
        w.name,
        `failed evaluating match conditions, failing closed: ${verdict.error}`,
      );
    }
    return verdict.call ? version : undefined;
  }

  async #namespaceLabels(namespace: string): Promise<Record<string, string>> {
    const def = this.registry.get("", "namespaces");
    if (!def) return {};
    const cache = this.caches.forDef(def);
    await cache.ready();
    const entry = cache.get(objectKey(def, undefined, namespace));
    if (!entry) return {};
    return (JSON.parse(entry.json) as KubeObject).metadata.labels ?? {};
  }

  /** Calls the webhook; undefined when it could not be and its failurePolicy is Ignore. */
  async #call(
    ctx: StoreContext,
    attrs: AdmissionAttributes,
    hook: ConfiguredWebhook,
    version: string,
  ): Promise<ReviewResponse | undefined> {
    const w = hook.webhook;
    const ignore = w.failurePolicy === "Ignore";
    try {
      const reviewVersion = (w.admissionReviewVersions ?? []).find((v) =>
        REVIEW_VERSIONS.includes(v),
      );
      if (!reviewVersion)
        throw new CallError("webhook does not accept v1 or v1beta1 AdmissionReview");
      const uid = randomUUID();
      const review = {
        apiVersion: `admission.k8s.io/${reviewVersion}`,
        kind: "AdmissionReview",
        request: admissionRequest(ctx, attrs, version, uid),
      };
      const timeout = w.timeoutSeconds ?? 10;
      const target = await this.#target(w, timeout);
      const answer = (await callWebhook(target, review, timeout * 1000)) as {
        response?: ReviewResponse;
      };
      const response = answer?.response;
      if (!response) throw new CallError("webhook response was absent");
      if (response.uid !== uid) {
        throw new CallError(
          `expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(response.uid ?? "")}`,
        );
      }
      for (const warning of response.warnings ?? []) {
        if (typeof warning === "string" && warning) ctx.scope.warnings?.push(warning);
      }
      return response;
    } catch (err) {
      if (err instanceof StatusError) throw err;
      if (ignore) return undefined;
      const why = err instanceof CallError ? `failed to call webhook: ${err.message}` : String(err);
      throw callFailed(w.name, why);
    }
  }

  /** Where a webhook is called: its URL, or a ready endpoint of its Service. */
  async #target(w: Webhook, timeoutSeconds: number): Promise<WebhookTarget> {
    const cc = w.clientConfig;
    const ca = cc.caBundle ? Buffer.from(cc.caBundle, "base64").toString("utf8") : undefined;
    if (cc.url) return { url: withTimeout(cc.url, timeoutSeconds), ...(ca ? { ca } : {}) };
    const svc = cc.service;
    if (!svc) throw new CallError("webhook has no url or service");
    const address = await this.#serviceEndpoint(svc.namespace, svc.name, svc.port ?? 443);
    const path = svc.path ?? "/";
    return {
      url: withTimeout(`https://${address}${path}`, timeoutSeconds),
      serverName: `${svc.name}.${svc.namespace}.svc`,
      ...(ca ? { ca } : {}),
    };
  }

  /**
   * host:port of a ready endpoint of a Service's port (from its Endpoints, as the
   * apiserver routes to endpoints directly), chosen at random.
   */
  async #serviceEndpoint(namespace: string, name: string, port: number): Promise<string> {
    const read = async (plural: string): Promise<KubeObject | undefined> => {
      const def = this.registry.get("", plural);
      if (!def) return undefined;
      const cache = this.caches.forDef(def);
      await cache.ready();
      const entry = cache.get(objectKey(def, namespace, name));
      return entry ? (JSON.parse(entry.json) as KubeObject) : undefined;
    };
    const service = await read("services");
    if (!service) throw new CallError(`service "${name}" not found`);
    const ports =
      (service as { spec?: { ports?: { name?: string; port: number }[] } }).spec?.ports ?? [];
    const servicePort = ports.find((p) => p.port === port);
    if (!servicePort) throw new CallError(`service "${namespace}/${name}" has no port ${port}`);
    const endpoints = (await read("endpoints")) as
      | { subsets?: { addresses?: { ip: string }[]; ports?: { name?: string; port: number }[] }[] }
      | undefined;
    const candidates: string[] = [];
    for (const subset of endpoints?.subsets ?? []) {
      const p = (subset.ports ?? []).find((sp) => (sp.name ?? "") === (servicePort.name ?? ""));
      if (!p) continue;
      for (const a of subset.addresses ?? []) candidates.push(`${a.ip}:${p.port}`);
    }
    if (candidates.length === 0)
      throw new CallError(`no endpoints available for service "${name}"`);
    return candidates[Math.floor(Math.random() * candidates.length)]!;
  }
}

function storageVersionOf(ctx: StoreContext): string {
  return ctx.def.versions.find((v) => v.storage)?.name ?? ctx.version.name;
}
