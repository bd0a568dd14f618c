/**
 * Admission registration (admissionregistration.k8s.io/v1): the webhook
 * configurations that tell the apiserver which webhooks to call on which
 * writes (webhook-configurations.ts).
 */
export {
  ADMISSION_GROUP,
  mutatingWebhookConfigurationDefinition,
  validatingWebhookConfigurationDefinition,
} from "./webhook-configurations.ts";
