/**
 * The claims repair loop (Kubernetes' allocator repair controllers): releases
 * claims that leaked, i.e. whose holder is gone, is another object now (another
 * uid), or no longer holds them, as a process that died between claiming and
 * storing its object leaves them. A claim younger than the grace period is left
 * alone: its write may still be on its way.
 */
import type { KubeObject } from "@setpoint/api";
import type { ResourceDefinition } from "../../registry/types.ts";
import type { Store } from "../../storage/store.ts";
import { CLAIMS_ROOT, parseClaim } from "./claims.ts";

/** How often the repair loop runs by default (Kubernetes': every 3 minutes). */
export const CLAIMS_REPAIR_INTERVAL_MS = 3 * 60_000;
/** How old a claim must be before the repair loop may release it. */
export const CLAIMS_REPAIR_GRACE_MS = 60_000;
/** Claims read per storage page. */
const PAGE_SIZE = 500;

async function holderOf(store: Store, key: string): Promise<KubeObject | undefined> {
  const kv = await store.get(key);
  if (!kv) return undefined;
  try {
    return JSON.parse(kv.value) as KubeObject;
  } catch {
    return undefined;
  }
}

/**
 * One pass over the claims of every definition with claim rules; returns the
 * names of the claims released.
 */
export async function repairClaims(
  store: Store,
  defs: readonly ResourceDefinition[],
  graceMs = CLAIMS_REPAIR_GRACE_MS,
  now = Date.now(),
): Promise<string[]> {
  const released: string[] = [];
  for (const def of defs) {
    const rules = def.strategy.claims;
    if (!rules) continue;
    for (const prefix of rules.prefixes) {
      let token: string | undefined;
      do {
        const page = await store.list(CLAIMS_ROOT + prefix, {
          limit: PAGE_SIZE,
          countRemaining: false,
          ...(token ? { continue: token } : {}),
        });
        for (const kv of page.items) {
          const name = kv.key.slice(CLAIMS_ROOT.length);
          const record = parseClaim(kv.value);
          if (record && now - Date.parse(record.claimedAt) < graceMs) continue;
          const holder = record ? await holderOf(store, record.holder) : undefined;
          if (
            holder &&
            holder.metadata.uid === record?.uid &&
            rules.heldBy(holder).includes(name)
          ) {
            continue;
          }
          try {
            await store.delete(kv.key, kv.modRevision);
            released.push(name);
          } catch {
            // Changed in the meantime (claimed again): the next pass looks again.
          }
        }
        token = page.continue;
      } while (token);
    }
  }
  return released;
}
