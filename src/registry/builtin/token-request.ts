/**
 * authentication.k8s.io/v1 TokenRequest: the body and the answer of a POST to
 * `serviceaccounts/<name>/token`. Not a resource of its own (nothing lists or
 * stores it): a definition so that its bodies are decoded (JSON, YAML, protobuf)
 * and field-validated as any object is. The apiserver issues the token
 * (src/apiserver/endpoints/token-request.ts).
 */
import type { KubeObject, StatusCause } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { ResourceDefinition } from "../types.ts";
import { array, field, int64, object, str } from "./build.ts";
import { invalid } from "./causes.ts";
import { kindSchema, time } from "./meta-schemas.ts";
import { AUTHENTICATION_V1 } from "./reviews.ts";

/** A token's validity when the request names none (Kubernetes' default), in seconds. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;
/** The shortest validity a request may ask for: 10 minutes. */
export const MIN_TOKEN_EXPIRATION_SECONDS = 600;
/** The longest validity a request may ask for: 2^32 seconds. */
export const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

const boundObjectReferenceSchema = defineSchema(
  `${AUTHENTICATION_V1}.BoundObjectReference`,
  object(
    {
      apiVersion: str("API version of the referent."),
      kind: str("Kind of the referent. Valid kinds are 'Pod' and 'Secret'."),
      name: str("Name of the referent."),
      uid: str("UID of the referent."),
    },
    "BoundObjectReference is a reference to an object that a token is bound to.",
  ),
);

const tokenRequestSpecSchema = defineSchema(
  `${AUTHENTICATION_V1}.TokenRequestSpec`,
  object(
    {
      audiences: array(
        str(""),
        "Audiences are the intended audiences of the token. A recipient of a token must identify themself with an identifier in the list of audiences of the token, and otherwise should reject the token.",
        { listType: "atomic" },
      ),
      boundObjectRef: refSchema(
        boundObjectReferenceSchema,
        "BoundObjectRef is a reference to an object that the token will be bound to. The token will only be valid for as long as the bound object exists. NOTE: The API server's TokenReview endpoint will validate the BoundObjectRef, but other audiences may not. Keep ExpirationSeconds small if you want prompt revocation.",
      ),
      expirationSeconds: int64(
        "ExpirationSeconds is the requested duration of validity of the request. The token issuer may return a token with a different validity duration so a client needs to check the 'expiration' field in a response.",
      ),
    },
    "TokenRequestSpec contains client provided parameters of a token request.",
  ),
);

const tokenRequestStatusSchema = defineSchema(
  `${AUTHENTICATION_V1}.TokenRequestStatus`,
  object(
    {
      expirationTimestamp: time(
        "ExpirationTimestamp is the time of expiration of the returned token.",
      ),
      token: str("Token is the opaque bearer token."),
    },
    "TokenRequestStatus is the result of a token request.",
  ),
);

export const tokenRequestSchema = kindSchema(
  `${AUTHENTICATION_V1}.TokenRequest`,
  "TokenRequest requests a token for a given service account.",
  {
    spec: refSchema(
      tokenRequestSpecSchema,
      "Spec holds information about the request being evaluated",
    ),
    status: refSchema(
      tokenRequestStatusSchema,
      "Status is filled in by the server and indicates whether the token can be authenticated.",
    ),
  },
);

/** Fills spec.expirationSeconds (3600) when the request leaves it out. */
function defaultTokenRequest(obj: KubeObject): void {
  const spec = (obj.spec ?? {}) as Record<string, unknown>;
  if (spec.expirationSeconds === undefined || spec.expirationSeconds === null) {
    spec.expirationSeconds = DEFAULT_TOKEN_EXPIRATION_SECONDS;
  }
  obj.spec = spec;
}

/** Kubernetes' TokenRequest validation. */
function validateTokenRequest(obj: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const seconds = field(obj, "spec", "expirationSeconds");
  if (typeof seconds === "number") {
    if (seconds < MIN_TOKEN_EXPIRATION_SECONDS) {
      causes.push(
        invalid(
          "spec.expirationSeconds",
          seconds,
          "may not specify a duration less than 10 minutes",
        ),
      );
    }
    if (seconds > MAX_TOKEN_EXPIRATION_SECONDS) {
      causes.push(
        invalid(
          "spec.expirationSeconds",
          seconds,
          "may not specify a duration larger than 2^32 seconds",
        ),
      );
    }
  }
  return causes;
}

/** The TokenRequest kind (never registered: the kind of `serviceaccounts/token`). */
export const tokenRequestDefinition: ResourceDefinition = {
  group: "authentication.k8s.io",
  names: {
    plural: "tokenrequests",
    singular: "tokenrequest",
    kind: "TokenRequest",
    listKind: "TokenRequestList",
    shortNames: [],
    categories: [],
  },
  namespaced: true,
  custom: false,
  protobufMessage: "k8s.io.api.authentication.v1.TokenRequest",
  verbs: ["create"],
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: tokenRequestSchema,
      statusSubresource: false,
      printerColumns: [],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: false,
    tracksGeneration: false,
    default: defaultTokenRequest,
    validate: validateTokenRequest,
  },
};
