/**
 * Container logs in the CRI format: the log relay (relay.ts), a process of its
 * own between containers and their log files that stamps each line with the
 * time it was written (cri-format.ts) and outlives the agent; the agent's side
 * (client.ts) makes each run's named pipes and hands them over; the paths they
 * share (paths.ts); the relay run as the agent's detached helper (relay-process.ts).
 */

export { LogRelayClient, type RunPipes, SPARE_BATCH, SPARE_DIR } from "./client.ts";
export {
  fixedTimestamp,
  formatTimestamp,
  isCriLog,
  LineFramer,
  type LogRecord,
  type LogStream,
  MAX_LINE_BYTES,
  nowNs,
  parseRecord,
  parseTimestamp,
} from "./cri-format.ts";
export {
  allPipesLeft,
  PIPE_SUFFIX,
  pipePaths,
  pipesLeft,
  RELAY_SOCKET,
  relaySocketPath,
  waitForPipesRelayed,
} from "./paths.ts";
export { LogRelay, type LogRelayOptions, RESCAN_MS } from "./relay.ts";
export { LOG_RELAY_DATA_DIR_ENV, LogRelayProcess } from "./relay-process.ts";
