/**
 * Talking to the server: the client for any Kubernetes-compatible API server,
 * its configuration (kubeconfig, in-cluster), discovery, errors and watch streams.
 *
 * The client covers the API as clients see it: typed verbs per object and per
 * collection (`deleteCollection`), subresources through the `subresource`
 * option of get, create, update and patch (`status`, `scale`, a Namespace's
 * `finalize`, a Pod's `binding`), every served resource from discovery (`serverResources`), and
 * `raw` requests for the paths no typed verb covers (`/version`, `/livez`,
 * `/readyz`, the discovery roots), all with the same credentials, timeouts,
 * rate limit and request counts (`client.stats`). Reads given a `Kind<T>`
 * (`kind<T>(apiVersion, kind)`) return `T`.
 */

export {
  type ApplyOptions,
  type CallOptions,
  Client,
  type ClientStats,
  type CreateOptions,
  type DeleteCollectionOptions,
  type DeleteOptions,
  type GetOptions,
  type ListOptions,
  type PatchOptions,
  type PatchType,
  type RawMethod,
  type RawOptions,
  type RawResponse,
  type Reader,
  typeOf,
  type UpdateOptions,
  type WatchOptions,
  type WriteOptions,
} from "./client.ts";
export {
  groupResource,
  parseGroupVersion,
  preferredResources,
  type ResourceInfo,
  type ServedResource,
  type ServerResources,
  type TypeRef,
} from "./discovery.ts";
export {
  ApiError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNoKindMatch,
  isNotFound,
  isServerError,
  isTooManyRequests,
  isTransient,
  NoKindMatchError,
  type RetryOptions,
  retryOnConflict,
} from "./errors.ts";
export { type Kind, kind } from "./kind.ts";
export {
  inClusterConfig,
  KubeconfigError,
  type LoadKubeconfigOptions,
  loadKubeconfig,
  type RestConfig,
  SERVERS_EXTENSION,
  SERVICE_ACCOUNT_DIR,
  serviceAccountDir,
} from "./kubeconfig.ts";
export {
  WatchDecodeError,
  type WatchEvent,
  WatchIdleError,
  type WatchStream,
} from "./watch-stream.ts";
