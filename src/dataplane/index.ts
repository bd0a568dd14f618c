/**
 * What the data-plane parts (the agent, its service proxy, the gateway) share:
 * writing their state files atomically (atomic-file.ts), reading a Service
 * port's ready endpoints from EndpointSlices (endpoints.ts), and choosing an
 * endpoint with round-robin and passive ejection (picker.ts). Built on
 * @setpoint/api only; nothing here talks to the apiserver.
 */
export { type AtomicWriteOptions, writeFileAtomic } from "./atomic-file.ts";
export {
  type Endpoint,
  endpointId,
  readyEndpoints,
  SERVICE_NAME_LABEL,
  slicesByService,
} from "./endpoints.ts";
export { DEFAULT_EJECT_MS, EndpointPicker, MAX_EJECT_MS } from "./picker.ts";
