/**
 * POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token (`kubectl create
 * token`): the body, an authentication.k8s.io/v1 TokenRequest, is decoded,
 * defaulted (expirationSeconds 3600; audiences: the server's) and validated
 * (expirationSeconds from 10 minutes to 2^32 seconds; binding to an object is not
 * supported), the ServiceAccount read from storage (404 if it does not exist), and
 * the answer is 201 with the TokenRequest, its status carrying the token and when
 * it expires (a ServiceAccount being deleted still gets one, as in Kubernetes; the
 * authenticator refuses it). Nothing is stored; dryRun changes nothing since nothing would be
 * written anyway.
 */
import { errors, type KubeObject, nowTimestamp } from "@setpoint/api";
import { invalid } from "../../registry/builtin/causes.ts";
import { type CreateSubresource, storageVersion } from "../../registry/types.ts";
import type { ServiceAccountTokens } from "../tokens/index.ts";
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

  const spec = req.spec as { audiences?: string[]; expirationSeconds: number };
  const audiences = spec.audiences?.length ? spec.audiences : [...tokens.audiences];
  const now = new Date();
  const issued = tokens.issue({ namespace, name, uid, audiences }, spec.expirationSeconds, now);
  const answer: KubeObject = {
    kind: kind.names.kind,
    apiVersion: bodyScope.apiVersion,
    metadata: { name, namespace, creationTimestamp: nowTimestamp(now) },
    spec: { ...spec, audiences, expirationSeconds: spec.expirationSeconds },
    status: { token: issued.token, expirationTimestamp: nowTimestamp(issued.expires) },
  };
  respondObject(bodyScope, 201, answer);
}
