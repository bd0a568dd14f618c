/** core/v1 ServiceAccount (subresource `token`: a POST issues a TokenRequest). */
import { refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { array, bool } from "./build.ts";
import { kindSchema } from "./meta-schemas.ts";
import { CORE_V1, localObjectReferenceSchema, objectReferenceSchema } from "./references.ts";
import { tokenRequestDefinition } from "./token-request.ts";

export const serviceAccountSchema = kindSchema(
  `${CORE_V1}.ServiceAccount`,
  "ServiceAccount binds together: a name, understood by users and perhaps by peripheral systems, for an identity; a principal that can be authenticated and authorized; and a set of secrets.",
  {
    automountServiceAccountToken: bool(
      "Whether pods running as this service account should have an API token mounted automatically. Can be overridden at the pod level.",
    ),
    imagePullSecrets: array(
      refSchema(localObjectReferenceSchema),
      "References to secrets in the same namespace to use for pulling the images of pods that run as this service account.",
      { listType: "atomic" },
    ),
    secrets: array(
      refSchema(objectReferenceSchema),
      "Secrets in the same namespace that pods running as this service account may use. Not for finding token secrets for use outside pods: request tokens with the TokenRequest API instead.",
      { listType: "map", mapKeys: ["name"], patchMergeKey: "name", patchStrategy: "merge" },
    ),
  },
);

export const serviceAccountDefinition: ResourceDefinition = {
  group: "",
  names: {
    plural: "serviceaccounts",
    singular: "serviceaccount",
    kind: "ServiceAccount",
    listKind: "ServiceAccountList",
    shortNames: ["sa"],
    categories: [],
  },
  namespaced: true,
  custom: false,
  strategicMergePatch: true,
  returnDeletedObject: true,
  protobufMessage: "k8s.io.api.core.v1.ServiceAccount",
  createSubresources: [{ name: "token", kind: tokenRequestDefinition }],
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: serviceAccountSchema,
      statusSubresource: false,
      printerColumns: [
        {
          name: "Secrets",
          type: "integer",
          priority: 0,
          description: "Number of secrets listed for the service account.",
          value: (obj) => (Array.isArray(obj.secrets) ? obj.secrets.length : 0),
        },
      ],
    },
  ],
  strategy: { allowUnconditionalUpdate: true, tracksGeneration: false },
};
