/**
 * The admission webhook part of the runtime guide (docs/runtime.md quotes the
 * region below; guide.test.ts runs it against a real apiserver): a rule that
 * spans objects, which no per-object loop can enforce. A ConfigMap labelled
 * `examples.setpoint.dev/claims: NAME` claims NAME for its namespace; a second
 * ConfigMap that claims a name already held is refused at write time. The
 * webhook reads the claims from the manager's informer cache, never from the
 * apiserver on the request path.
 */
import type { Manager } from "@setpoint/runtime";
import { validatingHandler, WebhookServer } from "@setpoint/runtime";
import { type ConfigMap, ConfigMapKind } from "../types.ts";

export const CLAIM_LABEL = "examples.setpoint.dev/claims";

/** Starts the webhook server with the claims rule at /validate-claims. */
export async function startClaimsWebhook(
  mgr: Manager,
  tls: { cert: string; key: string },
): Promise<WebhookServer> {
  // #region webhook
  const configMaps = mgr.cache.informerFor(ConfigMapKind);
  const server = new WebhookServer({ cert: tls.cert, key: tls.key });
  server.register(
    "/validate-claims",
    validatingHandler<ConfigMap>((req) => {
      const claim = req.object?.metadata.labels?.[CLAIM_LABEL];
      if (!claim) return undefined;
      const holder = configMaps
        .list()
        .find(
          (cm) =>
            cm.metadata.namespace === req.namespace &&
            cm.metadata.name !== req.object?.metadata.name &&
            cm.metadata.labels?.[CLAIM_LABEL] === claim,
        );
      return holder
        ? `${claim} is already claimed by ConfigMap ${holder.metadata.name}`
        : undefined;
    }),
  );
  await server.start();
  // #endregion
  return server;
}
