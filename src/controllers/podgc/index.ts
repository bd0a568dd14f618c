/**
 * The Pod garbage collector (`pod-garbage-collector`): deletes terminated
 * Pods beyond a threshold, Pods whose Node is gone, and terminating Pods that
 * were never scheduled (controller.ts).
 */
export {
  DEFAULT_ORPHAN_QUARANTINE_MS,
  DEFAULT_POD_GC_PERIOD_MS,
  DEFAULT_TERMINATED_POD_GC_THRESHOLD,
  POD_GC_CONTROLLER,
  PodGarbageCollector,
  type PodGcOptions,
} from "./controller.ts";
