/**
 * The agent's last known-good desired state, on local disk (DATA/state.json):
 * the record of every Pod it runs (the Pod, its address, its processes by pid
 * and start time) and the ConfigMap, Secret and ServiceAccount token data those
 * Pods' environments and volumes read (the volumes' files themselves stay in the
 * Pods' directories). Written atomically (a temporary file, fsync, rename; mode 0600, as it
 * holds Secret values) a moment after each change, so an agent started with no
 * apiserver runs exactly what it ran before. A file that cannot be read is moved
 * aside (state.json.corrupt-<time>) and the agent starts empty.
 */
import { readFileSync, renameSync } from "node:fs";
import { writeFileAtomic } from "../../dataplane/index.ts";
import type { PodRecord } from "../pods/index.ts";

export const STATE_VERSION = 1;
/** How long after a change the state is written (changes in between are written together). */
export const STATE_WRITE_DELAY_MS = 20;

export interface AgentStateData {
  version: number;
  node: string;
  pods: Record<string, PodRecord>;
  /** ConfigMap data by namespace/name. */
  configMaps: Record<string, Record<string, string>>;
  /** Secret data by namespace/name, decoded. */
  secrets: Record<string, Record<string, string>>;
  /**
   * Bytes that are not UTF-8 text, base64, by `configmap/ns/name` (binaryData) or
   * `secret/ns/name` (values that do not survive decoding as text), for volumes.
   */
  binaryData: Record<string, Record<string, string>>;
  /** Projected ServiceAccount tokens by tokenKey (Pod uid, account, audience, validity). */
  tokens: Record<string, StoredToken>;
}

/** A ServiceAccount token of a Pod's projected volume, from the TokenRequest API. */
export interface StoredToken {
  token: string;
  /** When it was issued and when it expires, ms since the epoch (the agent's clock). */
  issuedAt: number;
  expiresAt: number;
}

export function emptyState(node: string): AgentStateData {
  return {
    version: STATE_VERSION,
    node,
    pods: {},
    configMaps: {},
    secrets: {},
    binaryData: {},
    tokens: {},
  };
}

export class StateFile {
  private timer: NodeJS.Timeout | undefined;
  /** Writes done (for tests and the benchmark). */
  writes = 0;

  constructor(
    readonly path: string,
    private readonly data: () => AgentStateData,
  ) {}

  /** The state on disk; undefined when there is none (or it was unreadable and moved aside). */
  static load(path: string): { state?: AgentStateData; problem?: string } {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      return {};
    }
    try {
      const state = JSON.parse(text) as AgentStateData;
      if (state.version !== STATE_VERSION || typeof state.pods !== "object") {
        throw new Error(`unknown state version ${String(state.version)}`);
      }
      state.configMaps ??= {};
      state.secrets ??= {};
      state.tokens ??= {};
      state.binaryData ??= {};
      return { state };
    } catch (err) {
      const aside = `${path}.corrupt-${Date.now()}`;
      renameSync(path, aside);
      return {
        problem: `${path} could not be read (${(err as Error).message}); moved to ${aside}`,
      };
    }
  }

  /** Writes the state soon (changes until then are written together). */
  schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, STATE_WRITE_DELAY_MS);
  }

  /** Writes the state now. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    writeFileAtomic(this.path, JSON.stringify(this.data()));
    this.writes++;
  }
}
