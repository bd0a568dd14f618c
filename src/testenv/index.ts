/**
 * The test environment, as other projects import it (`setpoint/testenv`): a real
 * Setpoint control plane started in process for a controller's tests. See
 * testenv.ts.
 */
export {
  CRD_READY_TIMEOUT_MS,
  DEFAULT_TESTENV_CONTROLLERS,
  installCrd,
  startTestEnv,
  type TestEnv,
  type TestEnvOptions,
} from "./testenv.ts";
export { type WebhookCertificate, webhookCertificate } from "./webhook-certificate.ts";
