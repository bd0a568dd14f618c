/**
 * The composition root: one function, startControlPlane, that starts a whole
 * Setpoint control plane (store, apiserver, system namespaces, built-in controllers,
 * kubeconfig) and hands back a handle with stop(). `setpoint up`, the test
 * environment and the benchmarks all start their control plane through it, so the
 * wiring exists once.
 *
 * It is a folder of its own, beside `cli` and `testenv` rather than inside either,
 * because both of them (and bench/) compose through it: it imports storage, the
 * apiserver, the controllers and the runtime, and nothing below it imports it.
 * Failures a person can fix arrive as StartupError (errors.ts); the command line
 * turns them into one line naming the flag to change.
 */
export {
  IDENTITY_LABEL,
  identityLeaseName,
  RENEW_INTERVAL_MS as IDENTITY_RENEW_INTERVAL_MS,
  STORAGE_ANNOTATION as APISERVER_STORAGE_ANNOTATION,
  URL_ANNOTATION as APISERVER_URL_ANNOTATION,
} from "./apiserver-identity.ts";
export { CreatedFiles } from "./created-files.ts";
export {
  ADMIN_TOKEN_FILE,
  CONTROLLER_MANAGER_IDENTITY,
  type ComponentIdentity,
  type Credentials,
  certificateRestConfig,
  componentRestConfig,
  dataDirCredentials,
  GATEWAY_IDENTITY,
  issueComponentCertificate,
  NODE_KUBECONFIG_FILE,
  nodeIdentity,
  SCHEDULER_IDENTITY,
  SERVICE_ACCOUNT_KEY_FILE,
  signComponentCertificate,
  writeComponentKubeconfig,
} from "./credentials.ts";
export { StartupError, type StartupFailure } from "./errors.ts";
export {
  ADMIN_USER,
  type ControllerOptions,
  type ControlPlane,
  type ControlPlaneOptions,
  KUBECONFIG_FILE,
  startControlPlane,
} from "./start.ts";
export { SQLITE_FILE, type StorageOptions } from "./store.ts";
