/**
 * The endpoint controllers, from Services' selectors and Pods' readiness:
 *
 * - `endpoint` (endpoints-controller.ts): core/v1 Endpoints, addresses and
 *   notReadyAddresses grouped into subsets by port;
 * - `endpointslice` (endpointslice-controller.ts): discovery.k8s.io/v1
 *   EndpointSlices with ready/serving/terminating conditions, at most 100
 *   endpoints per slice by default;
 * - pods.ts: what both read from Pods (selection, eligibility, named target
 *   ports, the last-change-trigger-time).
 */
export {
  DEFAULT_ENDPOINT_WORKERS,
  ENDPOINT_CONTROLLER,
  EndpointController,
  type EndpointControllerOptions,
  endpointLabels,
  endpointSubsets,
} from "./endpoints-controller.ts";
export {
  DEFAULT_ENDPOINTSLICE_WORKERS,
  DEFAULT_MAX_ENDPOINTS_PER_SLICE,
  desiredEndpoints,
  ENDPOINTSLICE_CONTROLLER,
  EndpointSliceController,
  type EndpointSliceControllerOptions,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  planSlices,
  SERVICE_NAME_LABEL,
} from "./endpointslice-controller.ts";
export { HEADLESS_LABEL, TRIGGER_TIME_ANNOTATION } from "./pods.ts";
