/** CustomResourceDefinitions for tests: kinds whose objects may hold anything. */
import type { KubeObject } from "@setpoint/api";

export interface SchemalessCrdOptions {
  /** Default "example.com". */
  group?: string;
  /** Default "Namespaced". */
  scope?: "Namespaced" | "Cluster";
  shortNames?: string[];
  /** The served version's subresources (`status`, `scale`). */
  subresources?: Record<string, unknown>;
}

/**
 * The CRD of `kind` (plural `plural`, singular its lower case), served and stored
 * as v1, with a schema that keeps any field.
 */
export function schemalessCrd(
  plural: string,
  kind: string,
  opts: SchemalessCrdOptions = {},
): KubeObject {
  return crdOf(
    plural,
    kind,
    { type: "object", "x-kubernetes-preserve-unknown-fields": true },
    opts,
  );
}

/**
 * The CRD of `kind` (plural `plural`, singular its lower case), served and stored
 * as v1, with `openAPIV3Schema` as its schema.
 */
export function crdOf(
  plural: string,
  kind: string,
  openAPIV3Schema: Record<string, unknown>,
  opts: SchemalessCrdOptions = {},
): KubeObject {
  const group = opts.group ?? "example.com";
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: opts.scope ?? "Namespaced",
      names: {
        plural,
        singular: kind.toLowerCase(),
        kind,
        listKind: `${kind}List`,
        ...(opts.shortNames ? { shortNames: opts.shortNames } : {}),
      },
      versions: [
        {
          name: "v1",
          served: true,
          storage: true,
          ...(opts.subresources ? { subresources: opts.subresources } : {}),
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
