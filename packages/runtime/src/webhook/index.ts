/**
 * Admission webhooks for controller authors: an HTTPS server (server.ts) that
 * serves handlers made from plain functions (admission.ts): a validating handler
 * says allowed or denied, a defaulting handler changes the object and the JSON
 * patch is computed for it. Register the server's URLs in a
 * ValidatingWebhookConfiguration or MutatingWebhookConfiguration with the CA
 * that signed its certificate.
 *
 * ```ts
 * const server = new WebhookServer({ cert, key });
 * server.register(
 *   "/validate-webapp",
 *   validatingHandler<WebAppObject>((req) =>
 *     req.object?.spec.replicas! > 10 ? "at most 10 replicas" : undefined,
 *   ),
 * );
 * await server.start();
 * ```
 */
export {
  type AdmissionHandler,
  type AdmissionRequest,
  type AdmissionResponse,
  allowed,
  defaultingHandler,
  denied,
  type GroupVersionKind,
  type GroupVersionResource,
  validatingHandler,
} from "./admission.ts";
export { WebhookServer, type WebhookServerOptions } from "./server.ts";
