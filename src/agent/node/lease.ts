/**
 * The node's heartbeat: its Lease in kube-node-lease (holder the node, 40 s),
 * renewed every 10 s as the kubelet renews it. A failed renewal is retried after
 * 200 ms, doubling up to 7 s, until one succeeds; then the 10 s rhythm resumes.
 */
import type { KubeObject } from "@setpoint/api";
import { type Client, isAlreadyExists, isConflict, isNotFound } from "@setpoint/runtime";

export const NODE_LEASE_NAMESPACE = "kube-node-lease";
export const LEASE_DURATION_SECONDS = 40;
export const LEASE_RENEW_INTERVAL_MS = 10_000;
export const LEASE_RETRY_INITIAL_MS = 200;
export const LEASE_RETRY_MAX_MS = 7_000;

const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    renewTime?: string;
  };
}

/** MicroTime as Kubernetes writes it: six fractional digits, UTC. */
export function microTime(ms: number = Date.now()): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export interface LeaseOptions {
  intervalMs?: number;
  retryInitialMs?: number;
  retryMaxMs?: number;
  /** The Node's uid, for the Lease's owner reference (the kubelet sets one). */
  nodeUid?: () => string | undefined;
  onError?: (err: unknown) => void;
}

/** Renews the node's Lease once: creates it if missing. */
export async function renewLease(
  client: Client,
  node: string,
  nodeUid: string | undefined,
): Promise<void> {
  const spec = {
    holderIdentity: node,
    leaseDurationSeconds: LEASE_DURATION_SECONDS,
    renewTime: microTime(),
  };
  let current: Lease | undefined;
  try {
    current = await client.get<Lease>(LEASE, node, NODE_LEASE_NAMESPACE);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const ownerReferences = nodeUid
    ? [{ apiVersion: "v1", kind: "Node", name: node, uid: nodeUid }]
    : undefined;
  if (!current) {
    try {
      await client.create<Lease>({
        ...LEASE,
        metadata: {
          name: node,
          namespace: NODE_LEASE_NAMESPACE,
          ...(ownerReferences ? { ownerReferences } : {}),
        },
        spec,
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    return;
  }
  const metadata =
    ownerReferences && !current.metadata.ownerReferences?.length
      ? { ...current.metadata, ownerReferences }
      : current.metadata;
  try {
    await client.update<Lease>({ ...current, metadata, spec: { ...current.spec, ...spec } });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
}

/** Keeps the Lease renewed until `signal` aborts. */
export function runLease(
  client: Client,
  node: string,
  signal: AbortSignal,
  opts: LeaseOptions = {},
): Promise<void> {
  const interval = opts.intervalMs ?? LEASE_RENEW_INTERVAL_MS;
  const retryMax = opts.retryMaxMs ?? LEASE_RETRY_MAX_MS;
  const retryInitial = opts.retryInitialMs ?? LEASE_RETRY_INITIAL_MS;
  return new Promise((done) => {
    let retry = retryInitial;
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      if (signal.aborted) return;
      let wait = interval;
      try {
        await renewLease(client, node, opts.nodeUid?.());
        retry = retryInitial;
      } catch (err) {
        opts.onError?.(err);
        wait = retry;
        retry = Math.min(retry * 2, retryMax);
      }
      if (!signal.aborted) timer = setTimeout(() => void tick(), wait);
    };
    signal.addEventListener(
      "abort",
      () => {
        if (timer) clearTimeout(timer);
        done();
      },
      { once: true },
    );
    void tick();
  });
}
