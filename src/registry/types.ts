/**
 * A resource type as the apiserver serves it. Built-in types (src/registry/builtin/)
 * and custom resources (from CustomResourceDefinitions) are both turned into a
 * ResourceDefinition and served through the same code path.
 */

import type { KubeObject, NameRule, Schema, Status, StatusCause } from "@setpoint/api";
import type { AccessAttributes, PolicyRule, RoleRef } from "./builtin/rbac/rules.ts";

export interface ResourceNames {
  /** Lower-case plural used in URLs: "configmaps". */
  plural: string;
  /** Lower-case singular: "configmap". */
  singular: string;
  kind: string;
  listKind: string;
  shortNames: string[];
  categories: string[];
}

/** A column of `kubectl get` output (Table), computed from the object. */
export interface PrinterColumn {
  name: string;
  /** "string" | "integer" | "number" | "boolean" | "date" */
  type: string;
  format?: string;
  description?: string;
  /** 0 shows by default; 1 only with `-o wide`. */
  priority: number;
  /** JSONPath like ".spec.replicas" (as CRDs declare), or a function for built-ins. */
  jsonPath?: string;
  value?: (obj: KubeObject) => unknown;
  /**
   * The value is the cell as it is, not converted by type (a "date" becomes an age
   * otherwise): Kubernetes' default table convertor shows "Created At" as RFC 3339.
   */
  verbatim?: boolean;
}

export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
  /**
   * The selector string of the scale, computed from the object (built-ins whose
   * selector is a structured one, e.g. a Deployment's spec.selector); used
   * instead of labelSelectorPath when set.
   */
  labelSelector?: (obj: KubeObject) => string | undefined;
}

export interface VersionDefinition {
  name: string;
  served: boolean;
  /** Exactly one version of a resource is the storage version. */
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  /** Schema of the whole object, including apiVersion, kind and metadata. */
  schema: Schema;
  /** Whether `/status` is a subresource (then main writes ignore `.status`). */
  statusSubresource: boolean;
  scale?: ScaleSubresource;
  /**
   * Columns for Table output. The server adds "Name" first (unless a column named
   * "Name" is declared) and "Age" last (unless one named "Age" is declared or
   * `ageColumn` is false).
   */
  printerColumns: PrinterColumn[];
  /** Whether Table output ends with an Age column (default true; core Events print none). */
  ageColumn?: boolean;
}

/**
 * What deleting an object that is not being deleted yet does, when its type has
 * rules of its own (Kubernetes' Namespace storage): store `obj` (marked as being
 * deleted by the hook), keep the object as it is (`noop`), or, undefined from the
 * hook, the ordinary rules (finalizers, then removal).
 */
export type DeleteDecision = { action: "update"; obj: KubeObject } | { action: "noop" };

/**
 * Storage keys an object being written claims for itself alone (Kubernetes'
 * allocators: a Service's cluster IP, its node ports). Each claim is its own
 * storage key, created only when absent, so two writers (two apiservers on one
 * etcd included) can never both win it. Keys are names under the claims root
 * ("serviceips/127.100.0.1"), never storage paths.
 */
export interface Claims {
  /** Claims `key` for the object being written: false when it is held already. */
  claim(key: string): Promise<boolean>;
  /** The keys under `prefix` held now. */
  held(prefix: string): Promise<Set<string>>;
}

/**
 * What a type claims for its objects (see Claims). The store calls `allocate`
 * before each create and update it stores; when the write fails, what it claimed
 * is released; when it succeeds, the claims the old object held and the new one
 * does not are released, and so are a deleted object's. A repair loop releases
 * claims whose holder is gone or no longer holds them.
 */
export interface ClaimRules {
  /** The prefixes (claim names, ending in "/") the type's claims live under. */
  prefixes: readonly string[];
  /** The claims `obj` holds. */
  heldBy(obj: KubeObject): string[];
  /**
   * Claims what `obj` needs and fills the fields that show it, in place (`old`:
   * the stored object on update); throws a StatusError to refuse the write.
   */
  allocate(obj: KubeObject, old: KubeObject | undefined, claims: Claims): Promise<void>;
}

/** Per-type behaviour beyond the schema (Kubernetes' "strategy"). */
export interface Strategy {
  /**
   * Fills defaults in place: after the addressed version's schema defaults, or,
   * with `ownSchemaDefaults`, instead of them.
   */
  default?(obj: KubeObject): void;
  /**
   * Whether `default` applies the schema's defaults itself, so the generic
   * schema defaulting is skipped: custom resources, whose strategy defaults each
   * object with the structural schema of its own version (src/registry/defaulting.ts
   * either way). Default false.
   */
  ownSchemaDefaults?: boolean;
  /** The rule names of the type follow (default "subdomain"; Namespaces: "label"). */
  nameRule?: NameRule;
  /**
   * Finalizers beyond metadata.finalizers that keep an object being deleted from
   * being removed (Namespaces: spec.finalizers).
   */
  pendingFinalizers?(obj: KubeObject): string[];
  /**
   * A deletion with rules of its own (see DeleteDecision): called with a copy of
   * the stored object (which it may change), the finalizers the delete options
   * ask for, the time, and the delete options' gracePeriodSeconds when given
   * (Pods: a graceful deletion); undefined leaves the ordinary rules to apply.
   */
  decideDelete?(
    obj: KubeObject,
    finalizers: string[],
    now: Date,
    gracePeriodSeconds?: number,
  ): DeleteDecision | undefined;
  /**
   * The reason a DELETE of the object named `name` is refused (403 Forbidden),
   * or undefined when it may go (Namespaces: the system namespaces never go).
   */
  forbidDelete?(name: string): string | undefined;
  /**
   * Completes, in place, an object decoded from storage before anyone sees it
   * (get, list, watch, and the stored object an update starts from): custom
   * resources get the defaults their schema declares now, as Kubernetes applies
   * them when decoding from storage (not written back). Absent when reading adds
   * nothing. The function object stays the same while what it adds stays the same,
   * so a cache of read objects knows to read again when it changes.
   */
  onRead?(obj: KubeObject): void;
  /**
   * A check of the caller's right to write this object beyond the verb (RBAC's
   * escalation rule): the reason the write is forbidden, or undefined.
   */
  authorizeWrite?(
    obj: KubeObject,
    old: KubeObject | undefined,
    requester: Requester,
    authorizer: Authorizer,
  ): string | undefined;
  /** Extra validation beyond the schema; `old` is set on update. */
  validate?(obj: KubeObject, old: KubeObject | undefined): StatusCause[];
  /**
   * Whether an update without metadata.resourceVersion is allowed (unconditional).
   * True for most built-in types, false for custom resources.
   */
  allowUnconditionalUpdate: boolean;
  /**
   * Whether a PUT to an object that does not exist creates it (Kubernetes'
   * AllowCreateOnUpdate; true for core Events and Leases). Default false.
   */
  allowCreateOnUpdate?: boolean;
  /**
   * Whether the type has `metadata.generation` (1 on create, moving on changes outside
   * metadata/status). As in Kubernetes, only types whose strategy sets it: custom
   * resources and CustomResourceDefinitions here; not ConfigMaps, Secrets, Leases,
   * ServiceAccounts, Events or Namespaces.
   */
  tracksGeneration: boolean;
  /**
   * Whether a new object is, as a rule, updated right after its create
   * (CustomResourceDefinitions: the server writes their status at once; Pods:
   * the scheduler binds them): the
   * object written is then kept for that update, as an updated object is, instead
   * of being parsed again from storage (tens of milliseconds for an object of
   * megabytes). Default false: most new objects are not updated right away.
   */
  updatedOnCreate?: boolean;
  /** Field selectors beyond metadata.name / metadata.namespace: field path → value getter. */
  selectableFields?: Record<string, (obj: KubeObject) => string | undefined>;
  /**
   * Called once on create, before defaulting and validation: resets what a client
   * may not set (Kubernetes' PrepareForCreate), e.g. a new Namespace's status.
   */
  prepareForCreate?(obj: KubeObject): void;
  /** Storage keys the type's objects claim for themselves alone (see ClaimRules). */
  claims?: ClaimRules;
  /**
   * Called on every update of the main resource (PUT, patch, apply), before
   * defaulting and validation, with the stored object: keeps what only a
   * subresource may change (Kubernetes' PrepareForUpdate).
   */
  prepareForUpdate?(obj: KubeObject, old: KubeObject): void;
}

/** Verbs a resource serves unless its definition says otherwise. */
export const DEFAULT_VERBS: readonly string[] = [
  "create",
  "delete",
  "deletecollection",
  "get",
  "list",
  "patch",
  "update",
  "watch",
];

/**
 * A subresource other than status and scale, e.g. `namespaces/finalize`. A write
 * through it (PUT, or patch when "patch" is among its verbs) stores
 * `update(body, stored)`.
 */
export interface ExtraSubresource {
  name: string;
  /** Verbs served on it, as discovery lists them: e.g. ["update"]. */
  verbs: string[];
  /** The object to store: `obj` is the decoded request body, `old` the stored object. */
  update(obj: KubeObject, old: KubeObject): KubeObject;
}

/**
 * A subresource that a POST creates (verb "create"; Kubernetes' named creater,
 * e.g. `serviceaccounts/token`): its body is an object of another kind, the answer
 * (201) is of that kind too, and nothing is stored. The definition names it; the
 * apiserver implements it (by `<group>/<plural>/<name>`), since it may need what
 * only the server holds (a signing key).
 */
export interface CreateSubresource {
  name: string;
  /**
   * The kind of the request body and of the answer (not registered as a resource):
   * the body is decoded, field-validated and, with its `protobufMessage`, read from
   * protobuf as that kind's objects are.
   */
  kind: ResourceDefinition;
  /**
   * Other apiVersions whose bodies are read as `kind`'s (same fields; JSON and
   * YAML only), e.g. "policy/v1beta1" for an Eviction, as Kubernetes accepts.
   */
  alsoAccepts?: readonly string[];
  /**
   * Set when the create changes the parent object (Kubernetes' `pods/binding`):
   * the parent to store, made from the decoded, validated body and a copy of the
   * stored parent (called again when a concurrent write wins); throws a
   * StatusError to refuse. The parent is written straight to storage, as
   * Kubernetes' BindingREST does: no field ownership is recorded, and the
   * parent's update is neither admitted nor validated (so what this makes must
   * be valid). The answer is then a 201 Success Status. Without it
   * (or `act`) the apiserver must implement the subresource itself.
   */
  updateParent?(body: KubeObject, parent: KubeObject, now: Date): KubeObject;
  /**
   * Set when the create acts on its parent and on other objects (Kubernetes'
   * `pods/eviction`): called with the decoded, validated body and what the
   * apiserver lets it do (see SubresourceActions); throws a StatusError to
   * refuse, and returns the Status to answer (undefined: 201 Success).
   */
  act?(body: KubeObject, actions: SubresourceActions): Promise<Status | undefined>;
}

/**
 * A subresource a GET streams from the node its object runs on (Kubernetes'
 * `pods/log`, verb get): the definition checks the request against the stored
 * object and says what to ask of which node (Kubernetes' LogLocation); the
 * apiserver reaches that node's agent with its own client certificate and
 * streams the answer back.
 */
export interface NodeStreamSubresource {
  name: string;
  /**
   * Where the answer comes from for `obj` and the request's query; undefined when
   * there is nothing to stream yet (the answer is empty). Throws a StatusError to
   * refuse (400 for a bad container, 422 for invalid options).
   */
  locate(obj: KubeObject, query: URLSearchParams): NodeStreamLocation | undefined;
}

/**
 * A subresource whose request is an upgraded connection carried to the node its
 * object runs on (Kubernetes' connect subresources `pods/exec`, `pods/attach`,
 * `pods/portforward`; verbs get and create): the definition checks the request's
 * options against the stored object and says which node and path serve it
 * (Kubernetes' ExecLocation, PortForwardLocation); the apiserver then carries the
 * upgraded connection (WebSocket or SPDY) to that node's agent and back, byte for
 * byte.
 */
export interface NodeConnectSubresource {
  name: string;
  /** The kind of its options, which discovery names as its kind (PodExecOptions). */
  optionsKind: string;
  /** Where the connection goes; throws a StatusError to refuse (400 for a bad container). */
  locate(obj: KubeObject, query: URLSearchParams): NodeStreamLocation;
  /**
   * Whether a WebSocket offering `SPDY/3.1+<protocol>` subprotocols carries SPDY
   * frames that go to the node as a SPDY upgrade (Kubernetes' tunneling handler,
   * which kubectl's port-forward uses since 1.31).
   */
  spdyOverWebSocket?: boolean;
}

/** A request to a node's agent: its Node's name, the path and the query. */
export interface NodeStreamLocation {
  node: string;
  path: string;
  query: URLSearchParams;
}

/**
 * What a create subresource's `act` may do, through the apiserver's resource
 * stores and under the rules of every write (the request itself was
 * authorized; these steps are the server's own). Objects are in their storage
 * version; other resources are named by group and plural, in the parent's
 * namespace.
 */
export interface SubresourceActions {
  /** The request's `dryRun`. */
  readonly dryRun: boolean;
  /** The parent, read from storage (404 when it does not exist). */
  parent(): Promise<KubeObject>;
  /**
   * Writes the parent's status to what `update` makes of the stored parent
   * (through the status subresource; again when a concurrent write wins);
   * returns the stored parent. `update` throws a StatusError to refuse.
   */
  updateParentStatus(update: (current: KubeObject) => KubeObject): Promise<KubeObject>;
  /** Deletes the parent as a DELETE with these DeleteOptions (their JSON form) would. */
  deleteParent(options: Record<string, unknown>): Promise<void>;
  /** Every object of another resource in the parent's namespace, read from storage. */
  list(group: string, plural: string): Promise<KubeObject[]>;
  /** One object of another resource in the parent's namespace (404 when absent). */
  get(group: string, plural: string, name: string): Promise<KubeObject>;
  /** Writes an object's status; 409 Conflict when its resourceVersion is not the stored one. */
  updateStatus(group: string, plural: string, obj: KubeObject): Promise<KubeObject>;
}

/** Who sent a request, as a review type sees it. */
export interface Requester {
  name: string;
  groups: string[];
  uid?: string;
  /** What the authenticator adds (a Pod-bound token's pod-name, credential-id, ...), by key. */
  extra?: Record<string, string[]>;
}

export interface ResourceDefinition {
  /** "" for the core group. */
  group: string;
  names: ResourceNames;
  namespaced: boolean;
  versions: VersionDefinition[];
  strategy: Strategy;
  /** Fully qualified protobuf message name for request bodies (built-ins only). */
  protobufMessage?: string;
  /** Whether this type is defined by a CustomResourceDefinition. */
  custom: boolean;
  /**
   * Whether objects of this type are typed structs in Kubernetes (default true;
   * false for custom resources, whose objects are whatever their schema allows).
   * A typed object's wrong JSON types are a 400 and its nulls are dropped on
   * decoding; encoding writes its times in canonical form and omits its empty
   * lists and maps; its schema is published under its Kubernetes definition name.
   */
  typed?: boolean;
  /** Verbs on the main resource (default DEFAULT_VERBS); e.g. namespaces have no deletecollection. */
  verbs?: readonly string[];
  /** Subresources beyond status and scale. */
  subresources?: ExtraSubresource[];
  /** Subresources a POST creates (answered by the apiserver, nothing stored). */
  createSubresources?: CreateSubresource[];
  /** Subresources a GET streams from the node the object runs on (`pods/log`). */
  nodeStreamSubresources?: NodeStreamSubresource[];
  /** Subresources whose upgraded connection is carried to the object's node (`pods/exec`). */
  nodeConnectSubresources?: NodeConnectSubresource[];
  /**
   * Whether a DELETE that removes an object answers with the object (Kubernetes'
   * ReturnDeletedObject: custom resources, Namespaces, ServiceAccounts) rather than
   * a success Status. Default false.
   */
  returnDeletedObject?: boolean;
  /**
   * Whether PATCH accepts strategic merge patches (built-in types, whose schemas
   * carry the patch strategies; custom resources answer 415). Default false.
   */
  strategicMergePatch?: boolean;
  /**
   * Set on a review type (SelfSubjectAccessReview...): create-only, never stored; a
   * create answers 201 with `review(body, requester, now)`, the body validated first.
   */
  review?: (
    obj: KubeObject,
    requester: Requester,
    now: Date,
    services: ReviewServices,
  ) => KubeObject;
}

/** What the reviews ask: the authorizer, and the token authenticator (TokenReview). */
export interface ReviewServices {
  authorizer: Authorizer;
  /** Who a bearer token authenticates as for `audiences` (none given: the server's own). */
  reviewToken?: (token: string, audiences: string[]) => TokenReviewResult;
}

/** What a token authenticates as, or why it does not. */
export interface TokenReviewResult {
  user?: Requester;
  /** The audiences the token is good for among those asked (the server's when none were). */
  audiences: string[];
  error?: string;
}

/**
 * The apiserver's authorizer (RBAC), as the definitions that answer or guard
 * access see it: access reviews ask it, role and binding writes check against it
 * that nobody grants what they do not hold.
 */
export interface Authorizer {
  /** Whether `user` may do `attrs`; `reason` says which binding allowed it. */
  authorize(user: Requester, attrs: AccessAttributes): { allowed: boolean; reason: string };
  /** Every rule that applies to `user` in `namespace` (cluster-wide ones included). */
  rulesFor(user: Requester, namespace: string): PolicyRule[];
  /** The rules of the role a binding in `namespace` refers to; undefined when absent. */
  roleRules(namespace: string, ref: RoleRef): PolicyRule[] | undefined;
}

/** Whether a definition's objects are typed structs (see ResourceDefinition.typed). */
export function isTyped(def: ResourceDefinition): boolean {
  return def.typed ?? true;
}

/** The verbs a definition serves on its main resource. */
export function resourceVerbs(def: ResourceDefinition): readonly string[] {
  return def.verbs ?? DEFAULT_VERBS;
}

/** The storage version of a definition. */
export function storageVersion(def: ResourceDefinition): VersionDefinition {
  const v = def.versions.find((x) => x.storage);
  if (!v) throw new Error(`resource ${def.names.plural}.${def.group} has no storage version`);
  return v;
}

/** "configmaps" or "widgets.example.com": the name a resource is known by. */
export function qualifiedResource(def: ResourceDefinition): string {
  return def.group ? `${def.names.plural}.${def.group}` : def.names.plural;
}
