/**
 * Admission (chain.ts): the webhooks that ValidatingWebhookConfigurations and
 * MutatingWebhookConfigurations declare, called on writes between the store's
 * decision and storage (webhook-admission.ts): which are stored
 * (configurations.ts), which one a write calls (matching.ts), and how one is
 * called (webhook-client.ts); and ValidatingAdmissionPolicies with their bindings
 * (policy-admission.ts), evaluated between mutating and validating webhooks, and
 * their status (policy-status.ts); NodeRestriction first of all (node-restriction.ts).
 */
export { AdmissionChain } from "./chain.ts";
export { admitNode } from "./node-restriction.ts";
export { PolicyStatus, type StatusWriter } from "./policy-status.ts";
