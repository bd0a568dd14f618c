/**
 * Admission registration (admissionregistration.k8s.io/v1): the webhook
 * configurations that tell the apiserver which webhooks to call on which
 * writes (webhook-configurations.ts), and the CEL matchConditions that narrow
 * them (match-conditions.ts); ValidatingAdmissionPolicies and their bindings
 * (policies.ts) with the CEL they are evaluated in (policy-cel.ts).
 */
export {
  evaluateMatchConditions,
  MAX_MATCH_CONDITIONS,
  type MatchCondition,
  type MatchVerdict,
  validateMatchConditions,
} from "./match-conditions.ts";
export {
  validatingAdmissionPolicyBindingDefinition,
  validatingAdmissionPolicyDefinition,
} from "./policies.ts";
export {
  ADMISSION_GROUP,
  mutatingWebhookConfigurationDefinition,
  validatingWebhookConfigurationDefinition,
} from "./webhook-configurations.ts";
