/**
 * Setpoint's built-in controllers, by name, and the controller manager that
 * runs them:
 *
 * - `garbage-collector`: deletes objects whose owners are gone; carries out
 *   Foreground and Orphan deletion (./garbagecollector/);
 * - `namespace`: empties a namespace being deleted, then finalizes it
 *   (./namespace.ts);
 * - `event-ttl`: deletes Events once they are older than the TTL (./event-ttl.ts);
 * - `serviceaccount`: gives every namespace a `default` ServiceAccount
 *   (./service-accounts.ts);
 * - `root-ca-cert-publisher`: gives every namespace the `kube-root-ca.crt`
 *   ConfigMap holding the apiserver's CA (./root-ca-publisher.ts);
 * - `replicaset`: keeps a ReplicaSet's Pods at its replicas (./replicaset/);
 * - `deployment`: rolls Deployments out through ReplicaSets (./deployment/);
 * - `node-lifecycle`: marks Nodes whose heartbeats stop Unknown, taints them
 *   and evicts their Pods (./nodelifecycle/);
 * - `pod-garbage-collector`: deletes terminated and orphaned Pods (./podgc/);
 * - `endpoint`, `endpointslice`: Endpoints and EndpointSlices of Services from
 *   their Pods (./endpoints/);
 * - `clusterrole-aggregation`: fills aggregated ClusterRoles with the rules of
 *   the roles they select (./clusterrole-aggregation.ts);
 * - `disruption`: PodDisruptionBudgets' status, which evictions consult
 *   (./disruption/);
 * - `scheduler`: binds pending Pods to Nodes that fit (./scheduler/);
 * - `job`: runs Jobs' Pods to completion (./job/);
 * - `ttl-after-finished`: deletes finished Jobs after their TTL
 *   (./ttl-after-finished.ts).
 *
 * Each is an ordinary client of the API (the runtime's Manager, informers and
 * work queues over HTTP) and can be switched off by name. With
 * `useServiceAccountCredentials` each writes as its own ServiceAccount in
 * kube-system (./service-account-credentials.ts), and `controllerClients` gives
 * one a client of its own (the scheduler's, as `system:kube-scheduler`).
 *
 * ```ts
 * const cm = createControllerManager({
 *   restConfig: loadKubeconfig({ path }),
 *   disabled: ["event-ttl"],
 *   leaderElection: true,
 * });
 * await cm.run(signal);
 * ```
 */
import type { Logger } from "@setpoint/runtime";
import type { BuiltinController } from "./builtin-controller.ts";
import {
  CLUSTER_ROLE_AGGREGATION_CONTROLLER,
  ClusterRoleAggregationController,
} from "./clusterrole-aggregation.ts";
import { ControllerManager, type ControllerManagerOptions } from "./controller-manager.ts";
import {
  DEPLOYMENT_CONTROLLER,
  DeploymentController,
  type DeploymentControllerOptions,
} from "./deployment/index.ts";
import {
  DISRUPTION_CONTROLLER,
  DisruptionController,
  type DisruptionControllerOptions,
} from "./disruption/index.ts";
import {
  ENDPOINT_CONTROLLER,
  ENDPOINTSLICE_CONTROLLER,
  EndpointController,
  type EndpointControllerOptions,
  EndpointSliceController,
  type EndpointSliceControllerOptions,
} from "./endpoints/index.ts";
import { EVENT_TTL_CONTROLLER, EventTtlController, type EventTtlOptions } from "./event-ttl.ts";
import {
  GARBAGE_COLLECTOR,
  GarbageCollector,
  type GarbageCollectorOptions,
} from "./garbagecollector/index.ts";
import { JOB_CONTROLLER, JobController, type JobControllerOptions } from "./job/index.ts";
import {
  NAMESPACE_CONTROLLER,
  NamespaceController,
  type NamespaceControllerOptions,
} from "./namespace.ts";
import {
  NODE_LIFECYCLE_CONTROLLER,
  NodeLifecycleController,
  type NodeLifecycleOptions,
} from "./nodelifecycle/index.ts";
import { POD_GC_CONTROLLER, PodGarbageCollector, type PodGcOptions } from "./podgc/index.ts";
import {
  REPLICASET_CONTROLLER,
  ReplicaSetController,
  type ReplicaSetControllerOptions,
} from "./replicaset/index.ts";
import {
  ROOT_CA_PUBLISHER_CONTROLLER,
  RootCaPublisher,
  type RootCaPublisherOptions,
} from "./root-ca-publisher.ts";
import { SCHEDULER_CONTROLLER, Scheduler, type SchedulerOptions } from "./scheduler/index.ts";
import {
  SERVICE_ACCOUNT_CONTROLLER,
  ServiceAccountController,
  type ServiceAccountControllerOptions,
} from "./service-accounts.ts";
import {
  TTL_AFTER_FINISHED_CONTROLLER,
  TtlAfterFinishedController,
  type TtlAfterFinishedOptions,
} from "./ttl-after-finished.ts";

export type { BuiltinController } from "./builtin-controller.ts";
export {
  aggregatedRules,
  CLUSTER_ROLE_AGGREGATION_CONTROLLER,
  ClusterRoleAggregationController,
} from "./clusterrole-aggregation.ts";
export {
  CONTROLLER_MANAGER_LEASE,
  CONTROLLER_MANAGER_LEASE_NAMESPACE,
  ControllerManager,
  type ControllerManagerOptions,
} from "./controller-manager.ts";
export {
  DEPLOYMENT_CONTROLLER,
  DeploymentController,
  type DeploymentControllerOptions,
} from "./deployment/index.ts";
export {
  DISRUPTION_CONTROLLER,
  DisruptionController,
  type DisruptionControllerOptions,
} from "./disruption/index.ts";
export {
  DEFAULT_MAX_ENDPOINTS_PER_SLICE,
  ENDPOINT_CONTROLLER,
  ENDPOINTSLICE_CONTROLLER,
  EndpointController,
  type EndpointControllerOptions,
  EndpointSliceController,
  type EndpointSliceControllerOptions,
} from "./endpoints/index.ts";
export {
  DEFAULT_EVENT_TTL_MS,
  EVENT_TTL_CONTROLLER,
  EventTtlController,
  type EventTtlOptions,
} from "./event-ttl.ts";
export {
  GARBAGE_COLLECTOR,
  GarbageCollector,
  type GarbageCollectorOptions,
} from "./garbagecollector/index.ts";
export {
  DEFAULT_JOB_WORKERS,
  JOB_CONTROLLER,
  JOB_TRACKING_FINALIZER,
  JobController,
  type JobControllerOptions,
} from "./job/index.ts";
export {
  NAMESPACE_CONDITION_TYPES,
  NAMESPACE_CONTROLLER,
  NamespaceController,
  type NamespaceControllerOptions,
} from "./namespace.ts";
export {
  DEFAULT_NODE_MONITOR_GRACE_PERIOD_MS,
  NODE_LIFECYCLE_CONTROLLER,
  NodeLifecycleController,
  type NodeLifecycleOptions,
} from "./nodelifecycle/index.ts";
export {
  DEFAULT_TERMINATED_POD_GC_THRESHOLD,
  POD_GC_CONTROLLER,
  PodGarbageCollector,
  type PodGcOptions,
} from "./podgc/index.ts";
export {
  REPLICASET_CONTROLLER,
  ReplicaSetController,
  type ReplicaSetControllerOptions,
} from "./replicaset/index.ts";
export {
  ROOT_CA_CONFIGMAP_NAME,
  ROOT_CA_DESCRIPTION,
  ROOT_CA_DESCRIPTION_ANNOTATION,
  ROOT_CA_PUBLISHER_CONTROLLER,
  RootCaPublisher,
  type RootCaPublisherOptions,
} from "./root-ca-publisher.ts";
export {
  DEFAULT_SCHEDULER_NAME,
  SCHEDULER_CONTROLLER,
  Scheduler,
  type SchedulerOptions,
} from "./scheduler/index.ts";
export {
  CONTROLLER_ACCOUNTS_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNTS,
  CONTROLLER_TOKEN_SECONDS,
  ServiceAccountCredentials,
} from "./service-account-credentials.ts";
export {
  DEFAULT_SERVICE_ACCOUNT,
  SERVICE_ACCOUNT_CONTROLLER,
  ServiceAccountController,
  type ServiceAccountControllerOptions,
} from "./service-accounts.ts";
export {
  DEFAULT_TTL_AFTER_FINISHED_WORKERS,
  TTL_AFTER_FINISHED_CONTROLLER,
  TtlAfterFinishedController,
  type TtlAfterFinishedOptions,
  ttlRemainingMs,
} from "./ttl-after-finished.ts";

/** Settings of every built-in controller. */
export interface BuiltinOptions {
  gc?: GarbageCollectorOptions;
  namespace?: NamespaceControllerOptions;
  eventTtl?: EventTtlOptions;
  serviceAccount?: ServiceAccountControllerOptions;
  rootCaPublisher?: RootCaPublisherOptions;
  replicaSet?: ReplicaSetControllerOptions;
  deployment?: DeploymentControllerOptions;
  nodeLifecycle?: NodeLifecycleOptions;
  podGc?: PodGcOptions;
  endpoint?: EndpointControllerOptions;
  endpointSlice?: EndpointSliceControllerOptions;
  disruption?: DisruptionControllerOptions;
  scheduler?: SchedulerOptions;
  job?: JobControllerOptions;
  ttlAfterFinished?: TtlAfterFinishedOptions;
  logger?: Logger;
}

/** The built-in controllers, by name, in the order they are set up. */
export const BUILTIN_CONTROLLERS: Readonly<
  Record<string, (opts: BuiltinOptions) => BuiltinController>
> = {
  [GARBAGE_COLLECTOR]: (o) => new GarbageCollector({ logger: o.logger, ...o.gc }),
  [NAMESPACE_CONTROLLER]: (o) => new NamespaceController(o.namespace),
  [EVENT_TTL_CONTROLLER]: (o) => new EventTtlController({ logger: o.logger, ...o.eventTtl }),
  [SERVICE_ACCOUNT_CONTROLLER]: (o) => new ServiceAccountController(o.serviceAccount),
  [REPLICASET_CONTROLLER]: (o) => new ReplicaSetController(o.replicaSet),
  [DEPLOYMENT_CONTROLLER]: (o) => new DeploymentController(o.deployment),
  [NODE_LIFECYCLE_CONTROLLER]: (o) => new NodeLifecycleController(o.nodeLifecycle),
  [POD_GC_CONTROLLER]: (o) => new PodGarbageCollector(o.podGc),
  [ENDPOINT_CONTROLLER]: (o) => new EndpointController(o.endpoint),
  [ENDPOINTSLICE_CONTROLLER]: (o) => new EndpointSliceController(o.endpointSlice),
  [CLUSTER_ROLE_AGGREGATION_CONTROLLER]: () => new ClusterRoleAggregationController(),
  [DISRUPTION_CONTROLLER]: (o) => new DisruptionController(o.disruption),
  [SCHEDULER_CONTROLLER]: (o) => new Scheduler(o.scheduler),
  [JOB_CONTROLLER]: (o) => new JobController(o.job),
  [TTL_AFTER_FINISHED_CONTROLLER]: (o) => new TtlAfterFinishedController(o.ttlAfterFinished),
  [ROOT_CA_PUBLISHER_CONTROLLER]: (o) => new RootCaPublisher(o.rootCaPublisher),
};

/**
 * Built-in controllers that run only when named in `enabled` (as
 * kube-controller-manager keeps some off unless `--controllers` names them): the
 * root CA publisher puts a ConfigMap in every namespace, which a program or test
 * running the controllers may not expect. `setpoint up` and `setpoint
 * controller-manager` enable them, as Kubernetes runs root-ca-cert-publisher.
 */
export const OFF_BY_DEFAULT_CONTROLLERS: readonly string[] = [ROOT_CA_PUBLISHER_CONTROLLER];

/** Names of the built-in controllers. */
export const BUILTIN_CONTROLLER_NAMES: readonly string[] = Object.keys(BUILTIN_CONTROLLERS);

/** A controller name that is not a built-in controller's. */
export class UnknownControllerError extends Error {
  override name = "UnknownControllerError";
}

/** Checks controller names (e.g. from `--disable`); throws UnknownControllerError naming the known ones. */
export function checkControllerNames(names: readonly string[]): void {
  const unknown = names.filter((n) => !BUILTIN_CONTROLLER_NAMES.includes(n));
  if (unknown.length > 0) {
    throw new UnknownControllerError(
      `unknown controller${unknown.length > 1 ? "s" : ""} ${unknown.map((n) => JSON.stringify(n)).join(", ")}; the built-in controllers are ${BUILTIN_CONTROLLER_NAMES.join(", ")}`,
    );
  }
}

export interface CreateControllerManagerOptions extends ControllerManagerOptions, BuiltinOptions {
  /** Built-in controllers not to run, by name. */
  disabled?: readonly string[];
  /** Controllers that are off by default (OFF_BY_DEFAULT_CONTROLLERS) to run; `disabled` wins. */
  enabled?: readonly string[];
}

/** A controller manager running every built-in controller except the disabled ones. */
export function createControllerManager(
  opts: CreateControllerManagerOptions = {},
): ControllerManager {
  const disabled = opts.disabled ?? [];
  const enabled = opts.enabled ?? [];
  checkControllerNames([...disabled, ...enabled]);
  const controllers = BUILTIN_CONTROLLER_NAMES.filter(
    (n) =>
      !disabled.includes(n) && (!OFF_BY_DEFAULT_CONTROLLERS.includes(n) || enabled.includes(n)),
  ).map((n) => BUILTIN_CONTROLLERS[n](opts));
  return new ControllerManager(opts, controllers);
}
