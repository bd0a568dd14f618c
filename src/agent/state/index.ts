/**
 * The agent's state on disk (state-file.ts): its last known-good Pods and the
 * ConfigMap, Secret and token data they use, written atomically, read at start.
 */
export {
  type AgentStateData,
  emptyState,
  STATE_VERSION,
  STATE_WRITE_DELAY_MS,
  StateFile,
  type StoredToken,
} from "./state-file.ts";
