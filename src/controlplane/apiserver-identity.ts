/**
 * The apiserver's identity Lease, as Kubernetes' apiservers keep one: a Lease in
 * kube-system named `apiserver-<hash>`, labelled
 * `apiserver.kubernetes.io/identity=kube-apiserver` and `kubernetes.io/hostname`,
 * held by `<name>_<uuid of this run>` and renewed every RENEW_INTERVAL_MS, so that
 * tools see which apiservers run and which stopped renewing. Kubernetes hashes the
 * hostname (one apiserver per machine); Setpoint hashes hostname and listen address,
 * so two apiservers on one machine have a Lease each, and the same one after a
 * restart. Setpoint adds annotations with the apiserver's URL and its etcd
 * endpoints, for `setpoint doctor`. Each apiserver also deletes identity Leases not
 * renewed for their whole duration, as Kubernetes' apiservers do.
 *
 * It writes through the apiserver's own loopback client: a Lease that stops being
 * renewed means this apiserver stopped serving (or stopped reaching its storage).
 */
import { createHash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import {
  Client,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type Lease,
  type RestConfig,
} from "@setpoint/runtime";
import type { Logger } from "pino";

export const IDENTITY_LEASE_NAMESPACE = "kube-system";
export const IDENTITY_LABEL = "apiserver.kubernetes.io/identity";
export const IDENTITY_LABEL_VALUE = "kube-apiserver";
export const HOSTNAME_LABEL = "kubernetes.io/hostname";
/** Annotation with the URL the apiserver serves at. */
export const URL_ANNOTATION = "setpoint.dev/apiserver-url";
/** Annotation with the apiserver's storage: "sqlite", or its etcd endpoints (comma list). */
export const STORAGE_ANNOTATION = "setpoint.dev/storage";
/** How often the Lease is renewed (Kubernetes: 10 s). */
export const RENEW_INTERVAL_MS = 10_000;
/** The Lease's duration (Kubernetes: 3600 s); expired Leases are deleted. */
export const LEASE_DURATION_SECONDS = 3600;

const LEASE = { apiVersion: "coordination.k8s.io/v1", kind: "Lease" } as const;

/** `apiserver-` and the lowercase unpadded base32 of the first 16 bytes of sha256(`key`). */
export function identityLeaseName(key: string): string {
  const hash = createHash("sha256").update(key).digest().subarray(0, 16);
  return `apiserver-${base32(hash).toLowerCase()}`;
}

function base32(bytes: Uint8Array): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = 0;
  let value = 0;
  let out = "";
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

function microTime(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000Z`;
}

export interface IdentityLeaseOptions {
  /** The apiserver's own (loopback) client config. */
  config: RestConfig;
  /** The URL it serves at (part of the name, and annotated). */
  url: string;
  /** "sqlite", or the etcd endpoints. */
  storage: string;
  logger: Logger;
  renewIntervalMs?: number;
}

/** Keeps the identity Lease renewed until stop(). */
export class ApiserverIdentity {
  readonly name: string;
  readonly holder: string;
  private readonly client: Client;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly opts: IdentityLeaseOptions) {
    const host = hostname();
    this.name = identityLeaseName(`${host}:${new URL(opts.url).host}`);
    this.holder = `${this.name}_${randomUUID()}`;
    this.client = new Client({ ...opts.config, userAgent: "setpoint-apiserver/identity" });
  }

  /** Writes the Lease once now, then renews it every interval. */
  async start(): Promise<void> {
    await this.renew();
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.renew()
        .catch((err: unknown) => {
          this.opts.logger.warn({ err: (err as Error).message }, "renewing the identity Lease");
        })
        .finally(() => this.schedule());
    }, this.opts.renewIntervalMs ?? RENEW_INTERVAL_MS);
    this.timer.unref();
  }

  /** Creates or renews the Lease, then deletes other apiservers' expired ones. */
  async renew(): Promise<void> {
    const now = microTime(new Date());
    const metadata = {
      name: this.name,
      namespace: IDENTITY_LEASE_NAMESPACE,
      labels: { [IDENTITY_LABEL]: IDENTITY_LABEL_VALUE, [HOSTNAME_LABEL]: hostname() },
      annotations: { [URL_ANNOTATION]: this.opts.url, [STORAGE_ANNOTATION]: this.opts.storage },
    };
    let current: Lease | undefined;
    try {
      current = await this.client.get<Lease>(LEASE, this.name, IDENTITY_LEASE_NAMESPACE);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      try {
        await this.client.create<Lease>({
          ...LEASE,
          metadata,
          spec: {
            holderIdentity: this.holder,
            leaseDurationSeconds: LEASE_DURATION_SECONDS,
            acquireTime: now,
            renewTime: now,
          },
        });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    } else {
      try {
        await this.client.update<Lease>({
          ...current,
          metadata: {
            ...current.metadata,
            labels: { ...current.metadata.labels, ...metadata.labels },
            annotations: { ...current.metadata.annotations, ...metadata.annotations },
          },
          spec: {
            ...current.spec,
            holderIdentity: this.holder,
            leaseDurationSeconds: LEASE_DURATION_SECONDS,
            ...(current.spec?.holderIdentity === this.holder ? {} : { acquireTime: now }),
            renewTime: now,
          },
        });
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    await this.deleteExpired();
  }

  private async deleteExpired(): Promise<void> {
    const list = await this.client.list<Lease>(LEASE, {
      namespace: IDENTITY_LEASE_NAMESPACE,
      labelSelector: `${IDENTITY_LABEL}=${IDENTITY_LABEL_VALUE}`,
    });
    const now = Date.now();
    for (const lease of list.items) {
      const renewed = Date.parse(lease.spec?.renewTime ?? "");
      const duration = (lease.spec?.leaseDurationSeconds ?? LEASE_DURATION_SECONDS) * 1000;
      if (lease.metadata.name === this.name || !(renewed + duration < now)) continue;
      await this.client
        .delete(LEASE, lease.metadata.name ?? "", IDENTITY_LEASE_NAMESPACE, {
          preconditions: { resourceVersion: lease.metadata.resourceVersion },
        })
        .catch(() => {});
    }
  }

  /** Stops renewing (the Lease stays, and expires, as Kubernetes leaves it). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    this.client.close();
  }
}
