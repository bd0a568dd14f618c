/**
 * The reviews: create-only types that are never stored, whose create answers a
 * question about the caller. `kubectl auth whoami` creates an
 * authentication.k8s.io/v1 SelfSubjectReview; `kubectl auth can-i` an
 * authorization.k8s.io/v1 SelfSubjectAccessReview (`--list`: a
 * SelfSubjectRulesReview).
 *
 * The access reviews ask the apiserver's authorizer (RBAC), so they answer what
 * the caller's requests would get.
 */

import type { Schema, StatusCause } from "@setpoint/api";
import { errors, type KubeObject, nowTimestamp } from "@setpoint/api";
import { defineSchema, refSchema } from "../definitions.ts";
import type { Authorizer, Requester, ResourceDefinition } from "../types.ts";
import { array, bool, fieldObject, object, str } from "./build.ts";
import { invalid, required } from "./causes.ts";
import { kindSchema } from "./meta-schemas.ts";
import type { AccessAttributes } from "./rbac/rules.ts";

/** Definition-name prefixes of the two groups. */
export const AUTHENTICATION_V1 = "io.k8s.api.authentication.v1";
export const AUTHORIZATION_V1 = "io.k8s.api.authorization.v1";

/** The group every authenticated caller belongs to (as in Kubernetes). */
export const AUTHENTICATED_GROUP = "system:authenticated";

const strings = (description: string): Schema =>
  array(str(""), description, { listType: "atomic" });

const userInfoSchema = defineSchema(
  `${AUTHENTICATION_V1}.UserInfo`,
  object(
    {
      extra: {
        type: "object",
        description: "Any additional information provided by the authenticator.",
        additionalProperties: strings(""),
      },
      groups: strings("The names of groups this user is a part of."),
      uid: str("A unique value that identifies this user across time."),
      username: str("The name that uniquely identifies this user among all active users."),
    },
    "UserInfo holds the information about the user needed to implement the user.Info interface.",
  ),
);

const selfSubjectReviewSchema = kindSchema(
  `${AUTHENTICATION_V1}.SelfSubjectReview`,
  "SelfSubjectReview contains the user information that the server has about the user making this request.",
  {
    status: refSchema(
      defineSchema(
        `${AUTHENTICATION_V1}.SelfSubjectReviewStatus`,
        object(
          {
            userInfo: refSchema(userInfoSchema, "User attributes of the user making this request."),
          },
          "SelfSubjectReviewStatus is filled by the server with the user attributes.",
        ),
      ),
      "Status is filled in by the server with the user attributes.",
    ),
  },
);

const resourceAttributesSchema = defineSchema(
  `${AUTHORIZATION_V1}.ResourceAttributes`,
  object(
    {
      group: str('Group is the API Group of the Resource.  "*" means all.'),
      name: str('Name is the name of the resource being requested. "" (empty) means all.'),
      namespace: str(
        'Namespace is the namespace of the action being requested. "" (empty) means "all" for namespace scoped resources.',
      ),
      resource: str('Resource is one of the existing resource types.  "*" means all.'),
      subresource: str('Subresource is one of the existing resource types.  "" means none.'),
      verb: str('Verb is a kubernetes resource API verb, like: get, list, create.  "*" means all.'),
      version: str('Version is the API Version of the Resource.  "*" means all.'),
    },
    "ResourceAttributes includes the authorization attributes available for resource requests to the Authorizer interface",
  ),
);

const nonResourceAttributesSchema = defineSchema(
  `${AUTHORIZATION_V1}.NonResourceAttributes`,
  object(
    {
      path: str("Path is the URL path of the request"),
      verb: str("Verb is the standard HTTP verb"),
    },
    "NonResourceAttributes includes the authorization attributes available for non-resource requests to the Authorizer interface",
  ),
);

const accessReviewStatusSchema = defineSchema(
  `${AUTHORIZATION_V1}.SubjectAccessReviewStatus`,
  object(
    {
      allowed: bool("Allowed is required. True if the action would be allowed, false otherwise."),
      denied: bool("Denied is optional. True if the action would be denied, otherwise false."),
      evaluationError: str(
        "EvaluationError is an indication that some error occurred during the authorization check.",
      ),
      reason: str("Reason is optional.  It indicates why a request was allowed or denied."),
    },
    "SubjectAccessReviewStatus",
    ["allowed"],
  ),
);

const selfSubjectAccessReviewSchema = kindSchema(
  `${AUTHORIZATION_V1}.SelfSubjectAccessReview`,
  "SelfSubjectAccessReview checks whether or the current user can perform an action.",
  {
    spec: refSchema(
      defineSchema(
        `${AUTHORIZATION_V1}.SelfSubjectAccessReviewSpec`,
        object(
          {
            nonResourceAttributes: refSchema(
              nonResourceAttributesSchema,
              "NonResourceAttributes describes information for a non-resource access request",
            ),
            resourceAttributes: refSchema(
              resourceAttributesSchema,
              "ResourceAuthorizationAttributes describes information for a resource access request",
            ),
          },
          "SelfSubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set",
        ),
      ),
      "Spec holds information about the request being evaluated.",
    ),
    status: refSchema(
      accessReviewStatusSchema,
      "Status is filled in by the server and indicates whether the request is allowed or not",
    ),
  },
  ["spec"],
);

const subjectAccessReviewSpecSchema = defineSchema(
  `${AUTHORIZATION_V1}.SubjectAccessReviewSpec`,
  object(
    {
      extra: {
        type: "object",
        description:
          "Extra corresponds to the user.Info.GetExtra() method from the authenticator.  Since that is input to the authorizer it needs a reflection here.",
        additionalProperties: strings(""),
      },
      groups: strings("Groups is the groups you're testing for."),
      nonResourceAttributes: refSchema(
        nonResourceAttributesSchema,
        "NonResourceAttributes describes information for a non-resource access request",
      ),
      resourceAttributes: refSchema(
        resourceAttributesSchema,
        "ResourceAuthorizationAttributes describes information for a resource access request",
      ),
      uid: str("UID information about the requesting user."),
      user: str(
        'User is the user you\'re testing for. If you specify "User" but not "Groups", then is it interpreted as "What if User were not a member of any groups',
      ),
    },
    "SubjectAccessReviewSpec is a description of the access request.  Exactly one of ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set",
  ),
);

const subjectAccessReviewSchema = (kind: string, description: string): Schema =>
  kindSchema(
    `${AUTHORIZATION_V1}.${kind}`,
    description,
    {
      spec: refSchema(
        subjectAccessReviewSpecSchema,
        "Spec holds information about the request being evaluated",
      ),
      status: refSchema(
        accessReviewStatusSchema,
        "Status is filled in by the server and indicates whether the request is allowed or not",
      ),
    },
    ["spec"],
  );

const rulesSchema = (name: string, description: string, fields: string[]): Schema =>
  defineSchema(
    `${AUTHORIZATION_V1}.${name}`,
    object(Object.fromEntries(fields.map((f) => [f, strings(f)])), description, ["verbs"]),
  );

const selfSubjectRulesReviewSchema = kindSchema(
  `${AUTHORIZATION_V1}.SelfSubjectRulesReview`,
  "SelfSubjectRulesReview enumerates the set of actions the current user can perform within a namespace.",
  {
    spec: refSchema(
      defineSchema(
        `${AUTHORIZATION_V1}.SelfSubjectRulesReviewSpec`,
        object(
          { namespace: str("Namespace to evaluate rules for. Required.") },
          "SelfSubjectRulesReviewSpec defines the specification for SelfSubjectRulesReview.",
        ),
      ),
      "Spec holds information about the request being evaluated.",
    ),
    status: refSchema(
      defineSchema(
        `${AUTHORIZATION_V1}.SubjectRulesReviewStatus`,
        object(
          {
            evaluationError: str("EvaluationError can appear in combination with Rules."),
            incomplete: bool(
              "Incomplete is true when the rules returned by this call are incomplete.",
            ),
            nonResourceRules: array(
              refSchema(
                rulesSchema(
                  "NonResourceRule",
                  "NonResourceRule holds information that describes a rule for the non-resource",
                  ["nonResourceURLs", "verbs"],
                ),
              ),
              "NonResourceRules is the list of actions the subject is allowed to perform on non-resources.",
              { listType: "atomic" },
            ),
            resourceRules: array(
              refSchema(
                rulesSchema(
                  "ResourceRule",
                  "ResourceRule is the list of actions the subject is allowed to perform on resources.",
                  ["apiGroups", "resourceNames", "resources", "verbs"],
                ),
              ),
              "ResourceRules is the list of actions the subject is allowed to perform on resources.",
              { listType: "atomic" },
            ),
          },
          "SubjectRulesReviewStatus contains the result of a rules check.",
          ["resourceRules", "nonResourceRules", "incomplete"],
        ),
      ),
      "Status is filled in by the server and indicates the set of actions a user can perform.",
    ),
  },
  ["spec"],
);

/** The groups a caller is reported in: its own, and every authenticated caller's. */
function groupsOf(requester: Requester): string[] {
  return requester.groups.includes(AUTHENTICATED_GROUP)
    ? [...requester.groups]
    : [...requester.groups, AUTHENTICATED_GROUP];
}

/** The answer keeps the request's metadata and spec, stamped with the time of the review. */
/** A UserInfo as the reviews answer it: username, uid, groups, extra. */
function userInfoOf(user: Requester): Record<string, unknown> {
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: groupsOf(user),
    ...(user.extra && Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
  };
}

function answer(obj: KubeObject, now: Date, status: Record<string, unknown>): KubeObject {
  return {
    ...obj,
    metadata: { ...obj.metadata, creationTimestamp: nowTimestamp(now) },
    status,
  };
}

/** Exactly one of resourceAttributes and nonResourceAttributes, as Kubernetes checks. */
function validateAccessReview(obj: KubeObject): StatusCause[] {
  const spec = fieldObject(obj, "spec") ?? {};
  const resource = spec.resourceAttributes;
  const nonResource = spec.nonResourceAttributes;
  if (resource != null && nonResource != null) {
    return [
      invalid(
        "spec.nonResourceAttributes",
        nonResource,
        "cannot be specified in combination with resourceAttributes",
      ),
    ];
  }
  if (resource == null && nonResource == null) {
    return [
      required(
        "spec.resourceAttributes",
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
      ),
    ];
  }
  return [];
}

/** A SubjectAccessReview also names whom it asks about. */
function validateSubjectAccessReview(obj: KubeObject): StatusCause[] {
  const causes = validateAccessReview(obj);
  const spec = fieldObject(obj, "spec") ?? {};
  const groups = Array.isArray(spec.groups) ? spec.groups : [];
  if (!spec.user && groups.length === 0) {
    causes.push(
      invalid("spec.user", spec.user ?? "", "at least one of user or group must be specified"),
    );
  }
  return causes;
}

/** A LocalSubjectAccessReview asks only about its own namespace, and only about resources. */
function validateLocalSubjectAccessReview(obj: KubeObject): StatusCause[] {
  const causes = validateSubjectAccessReview(obj);
  const spec = fieldObject(obj, "spec") ?? {};
  const attrs = fieldObject(spec, "resourceAttributes");
  const namespace = obj.metadata.namespace ?? "";
  if (attrs && (attrs.namespace ?? "") !== namespace) {
    causes.push(
      invalid(
        "spec.resourceAttributes.namespace",
        attrs.namespace ?? "",
        "must match metadata.namespace",
      ),
    );
  }
  if (spec.nonResourceAttributes != null) {
    causes.push(
      invalid(
        "spec.nonResourceAttributes",
        spec.nonResourceAttributes,
        "disallowed on this kind of request",
      ),
    );
  }
  return causes;
}

/** The definition of a review: cluster-scoped, create only, never stored. */
function reviewDefinition(
  group: string,
  kind: string,
  schema: Schema,
  protobufMessage: string,
  review: NonNullable<ResourceDefinition["review"]>,
  validate?: (obj: KubeObject) => StatusCause[],
  olderVersions: readonly string[] = [],
  namespaced = false,
): ResourceDefinition {
  const singular = kind.toLowerCase();
  return {
    group,
    names: {
      plural: `${singular}s`,
      singular,
      kind,
      listKind: `${kind}List`,
      shortNames: [],
      categories: [],
    },
    namespaced,
    custom: false,
    protobufMessage,
    verbs: ["create"],
    versions: [
      {
        name: "v1",
        served: true,
        storage: true,
        schema,
        statusSubresource: false,
        printerColumns: [],
      },
      ...olderVersions.map((name) => ({
        name,
        served: true,
        storage: false,
        schema,
        statusSubresource: false,
        printerColumns: [],
      })),
    ],
    strategy: {
      allowUnconditionalUpdate: false,
      tracksGeneration: false,
      ...(validate ? { validate } : {}),
    },
    review,
  };
}

/**
 * authentication.k8s.io/v1 SelfSubjectReview: who the caller is (`kubectl auth whoami`).
 * Also served as v1beta1 and v1alpha1 (the same type), which kubectl 1.27 asks for.
 */
export const selfSubjectReviewDefinition = reviewDefinition(
  "authentication.k8s.io",
  "SelfSubjectReview",
  selfSubjectReviewSchema,
  "k8s.io.api.authentication.v1.SelfSubjectReview",
  (obj, requester, now) =>
    answer(obj, now, {
      userInfo: userInfoOf(requester),
    }),
  undefined,
  ["v1beta1", "v1alpha1"],
);

const tokenReviewSchema = kindSchema(
  `${AUTHENTICATION_V1}.TokenReview`,
  "TokenReview attempts to authenticate a token to a known user. Note: TokenReview requests may be cached by the webhook token authenticator plugin in the kube-apiserver.",
  {
    spec: refSchema(
      defineSchema(
        `${AUTHENTICATION_V1}.TokenReviewSpec`,
        object(
          {
            audiences: strings(
              "Audiences is a list of the identifiers that the resource server presented with the token identifies as. Audience-aware token authenticators will verify that the token was intended for at least one of the audiences in this list. If no audiences are provided, the audience will default to the audience of the Kubernetes apiserver.",
            ),
            token: str("Token is the opaque bearer token."),
          },
          "TokenReviewSpec is a description of the token authentication request.",
        ),
      ),
      "Spec holds information about the request being evaluated",
    ),
    status: refSchema(
      defineSchema(
        `${AUTHENTICATION_V1}.TokenReviewStatus`,
        object(
          {
            audiences: strings(
              "Audiences are audience identifiers chosen by the authenticator that are compatible with both the TokenReview and token.",
            ),
            authenticated: bool(
              "Authenticated indicates that the token was associated with a known user.",
            ),
            error: str("Error indicates that the token couldn't be checked"),
            user: refSchema(
              userInfoSchema,
              "User is the UserInfo associated with the provided token.",
            ),
          },
          "TokenReviewStatus is the result of the token authentication request.",
        ),
      ),
      "Status is filled in by the server and indicates whether the request can be authenticated.",
    ),
  },
  ["spec"],
);

/**
 * authentication.k8s.io/v1 TokenReview: who does this bearer token belong to? Asked
 * by services that accept the cluster's tokens (the caller needs `create` on
 * tokenreviews, as `system:auth-delegator` grants).
 */
export const tokenReviewDefinition = reviewDefinition(
  "authentication.k8s.io",
  "TokenReview",
  tokenReviewSchema,
  "k8s.io.api.authentication.v1.TokenReview",
  (obj, _requester, now, { reviewToken }) => {
    const spec = fieldObject(obj, "spec") ?? {};
    const token = typeof spec.token === "string" ? spec.token : "";
    if (!token) throw errors.badRequest("token is required for TokenReview in authentication");
    const audiences = Array.isArray(spec.audiences) ? spec.audiences.map(String) : [];
    const result = reviewToken?.(token, audiences) ?? { audiences: [] };
    const user = result.user;
    return answer(obj, now, {
      ...(user ? { authenticated: true } : {}),
      user: user ? userInfoOf(user) : {},
      ...(user && result.audiences.length > 0 ? { audiences: result.audiences } : {}),
      ...(result.error ? { error: result.error } : {}),
    });
  },
);

/** authorization.k8s.io/v1 SelfSubjectAccessReview: may the caller do this (`kubectl auth can-i`)? */
export const selfSubjectAccessReviewDefinition = reviewDefinition(
  "authorization.k8s.io",
  "SelfSubjectAccessReview",
  selfSubjectAccessReviewSchema,
  "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
  (obj, requester, now, { authorizer }) => accessDecision(obj, requester, now, authorizer),
  validateAccessReview,
);

/** authorization.k8s.io/v1 SelfSubjectRulesReview: what may the caller do (`kubectl auth can-i --list`)? */
export const selfSubjectRulesReviewDefinition = reviewDefinition(
  "authorization.k8s.io",
  "SelfSubjectRulesReview",
  selfSubjectRulesReviewSchema,
  "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
  (obj, requester, now, { authorizer }) => {
    const namespace = String(fieldObject(obj, "spec")?.namespace ?? "");
    const rules = authorizer.rulesFor(requester, namespace);
    const resourceRules = rules
      .filter((r) => !r.nonResourceURLs?.length)
      .map((r) => ({
        verbs: r.verbs,
        ...(r.apiGroups ? { apiGroups: r.apiGroups } : {}),
        ...(r.resources ? { resources: r.resources } : {}),
        ...(r.resourceNames ? { resourceNames: r.resourceNames } : {}),
      }));
    const nonResourceRules = rules
      .filter((r) => r.nonResourceURLs?.length)
      .map((r) => ({ verbs: r.verbs, nonResourceURLs: r.nonResourceURLs }));
    return answer(obj, now, { resourceRules, nonResourceRules, incomplete: false });
  },
);

/** The subject a SubjectAccessReview asks about (no groups implied but those it names). */
function subjectOf(obj: KubeObject): Requester {
  const spec = fieldObject(obj, "spec") ?? {};
  return {
    name: typeof spec.user === "string" ? spec.user : "",
    groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [],
    ...(typeof spec.uid === "string" && spec.uid ? { uid: spec.uid } : {}),
  };
}

/** An access review's answer for `subject`. */
function accessDecision(
  obj: KubeObject,
  subject: Requester,
  now: Date,
  authorizer: Authorizer,
): KubeObject {
  const decision = authorizer.authorize(subject, accessAttributes(obj));
  return answer(obj, now, {
    allowed: decision.allowed,
    ...(decision.reason ? { reason: decision.reason } : {}),
  });
}

/**
 * authorization.k8s.io/v1 SubjectAccessReview: may this user (in these groups) do
 * this? Asked by services that check access for others (an aggregated server, a
 * webhook); the caller needs `create` on subjectaccessreviews.
 */
export const subjectAccessReviewDefinition = reviewDefinition(
  "authorization.k8s.io",
  "SubjectAccessReview",
  subjectAccessReviewSchema(
    "SubjectAccessReview",
    "SubjectAccessReview checks whether or not a user or group can perform an action.",
  ),
  "k8s.io.api.authorization.v1.SubjectAccessReview",
  (obj, _requester, now, { authorizer }) => accessDecision(obj, subjectOf(obj), now, authorizer),
  validateSubjectAccessReview,
);

/**
 * authorization.k8s.io/v1 LocalSubjectAccessReview: a SubjectAccessReview about
 * one namespace, so that namespace's admins may be allowed to ask it.
 */
export const localSubjectAccessReviewDefinition = reviewDefinition(
  "authorization.k8s.io",
  "LocalSubjectAccessReview",
  subjectAccessReviewSchema(
    "LocalSubjectAccessReview",
    "LocalSubjectAccessReview checks whether or not a user or group can perform an action in a given namespace. Having a namespace scoped resource makes it much easier to grant namespace scoped policy that includes permissions checking.",
  ),
  "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
  (obj, _requester, now, { authorizer }) => accessDecision(obj, subjectOf(obj), now, authorizer),
  validateLocalSubjectAccessReview,
  [],
  true,
);

/** The request an access review asks about. */
function accessAttributes(obj: KubeObject): AccessAttributes {
  const spec = fieldObject(obj, "spec") ?? {};
  const r = spec.resourceAttributes as Record<string, string | undefined> | undefined;
  if (r) {
    return {
      verb: r.verb ?? "",
      resource: {
        group: r.group ?? "",
        resource: r.resource ?? "",
        ...(r.subresource ? { subresource: r.subresource } : {}),
        ...(r.name ? { name: r.name } : {}),
        ...(r.namespace ? { namespace: r.namespace } : {}),
      },
    };
  }
  const n = (spec.nonResourceAttributes ?? {}) as Record<string, string | undefined>;
  return { verb: n.verb ?? "", path: n.path ?? "" };
}
