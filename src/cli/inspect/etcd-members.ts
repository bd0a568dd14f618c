/**
 * etcd members as `setpoint doctor` sees them: for each client endpoint, whether it
 * answers its health check (`/health`: it has a leader and serves), and from its
 * status which version it runs and whether it is the raft leader.
 */
import { EtcdClient } from "../../storage/etcd/index.ts";

/** Longest wait for one member's answer. */
export const ETCD_PROBE_TIMEOUT_MS = 2_000;

export interface EtcdMemberFacts {
  endpoint: string;
  healthy: boolean;
  /** The member is the raft leader. */
  leader: boolean;
  version: string;
  raftTerm: number;
  /** Why it is not healthy, when it is not. */
  error?: string;
}

async function health(endpoint: string): Promise<{ ok: boolean; error?: string }> {
  const url = endpoint.includes("://") ? endpoint : `http://${endpoint}`;
  try {
    const res = await fetch(`${url.replace(/\/$/, "")}/health`, {
      signal: AbortSignal.timeout(ETCD_PROBE_TIMEOUT_MS),
    });
    const body = (await res.json()) as { health?: string; reason?: string };
    return body.health === "true"
      ? { ok: true }
      : { ok: false, error: `unhealthy${body.reason ? `: ${body.reason}` : ""}` };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { ok: false, error: cause ?? (err as Error).message };
  }
}

/** Probes every endpoint (at once). */
export async function probeEtcdMembers(endpoints: string[]): Promise<EtcdMemberFacts[]> {
  if (endpoints.length === 0) return [];
  const client = new EtcdClient({
    endpoints,
    dialTimeoutMs: ETCD_PROBE_TIMEOUT_MS,
    requestTimeoutMs: ETCD_PROBE_TIMEOUT_MS,
  });
  try {
    return await Promise.all(
      endpoints.map(async (endpoint) => {
        const [h, status] = await Promise.all([
          health(endpoint),
          client.status(endpoint).catch((err: unknown) => err as Error),
        ]);
        if (status instanceof Error) {
          return {
            endpoint,
            healthy: false,
            leader: false,
            version: "",
            raftTerm: 0,
            error: h.error ?? status.message,
          };
        }
        return {
          endpoint,
          healthy: h.ok,
          leader: status.leader !== 0 && status.leader === status.header.member_id,
          version: status.version,
          raftTerm: status.raftTerm,
          ...(h.error ? { error: h.error } : {}),
        };
      }),
    );
  } finally {
    client.close();
  }
}
