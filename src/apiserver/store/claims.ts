/**
 * Claims (ClaimRules in src/registry/types.ts): storage keys an object claims for
 * itself alone, each its own key under /registry/claims/, created only when absent
 * (so of two writers, two apiservers on one etcd included, exactly one wins).
 * A claim's value names its holder (object key and uid) and when it was made, so
 * that what a write claimed is released when the write fails, what an object stops
 * holding is released once its write succeeded, and the repair loop (claims-repair.ts)
 * can tell a leaked claim from one in use.
 */
import type { KubeObject } from "@setpoint/api";
import type { ClaimRules, Claims } from "../../registry/types.ts";
import { AlreadyExistsError } from "../../storage/errors.ts";
import type { Store } from "../../storage/store.ts";
import type { StoreContext } from "./scope.ts";
import { statusFromStorage } from "./store-errors.ts";

/** Root of every claim key. */
export const CLAIMS_ROOT = "/registry/claims/";

/** What a claim's key holds. */
export interface ClaimRecord {
  /** The storage key of the object holding it. */
  holder: string;
  uid: string;
  /** RFC 3339 time it was claimed. */
  claimedAt: string;
}

/** Parses a claim's stored value; undefined when it is not one. */
export function parseClaim(value: string): ClaimRecord | undefined {
  try {
    const v = JSON.parse(value) as Partial<ClaimRecord>;
    if (typeof v.holder === "string" && typeof v.uid === "string") {
      return { holder: v.holder, uid: v.uid, claimedAt: String(v.claimedAt ?? "") };
    }
  } catch {
    // Not a claim record.
  }
  return undefined;
}

/** The claim names (keys without the root) stored under `prefix`, read page by page. */
export async function heldClaims(
  store: Store,
  prefix: string,
  pageSize = 1000,
): Promise<Set<string>> {
  const out = new Set<string>();
  let token: string | undefined;
  do {
    const page = await store.list(CLAIMS_ROOT + prefix, {
      limit: pageSize,
      ...(token ? { continue: token } : {}),
    });
    for (const kv of page.items) out.add(kv.key.slice(CLAIMS_ROOT.length));
    token = page.continue;
  } while (token);
  return out;
}

/** The claims one write makes, remembered so that a failed write gives them back. */
export class WriteClaims implements Claims {
  readonly #made: { key: string; revision: number }[] = [];

  constructor(
    private readonly store: Store,
    private readonly holder: string,
    private readonly uid: string,
    private readonly dryRun: boolean,
  ) {}

  async claim(name: string): Promise<boolean> {
    const key = CLAIMS_ROOT + name;
    // A dry run claims nothing: it only says whether the claim would succeed.
    if (this.dryRun) return (await this.store.get(key)) === null;
    const record: ClaimRecord = {
      holder: this.holder,
      uid: this.uid,
      claimedAt: new Date().toISOString(),
    };
    try {
      const revision = await this.store.create(key, JSON.stringify(record));
      this.#made.push({ key, revision });
      return true;
    } catch (err) {
      if (err instanceof AlreadyExistsError) return false;
      throw err;
    }
  }

  held(prefix: string): Promise<Set<string>> {
    return heldClaims(this.store, prefix);
  }

  /** Releases what this write claimed (the write failed). Never throws: repair collects leftovers. */
  async revert(): Promise<void> {
    for (const { key, revision } of this.#made.splice(0)) {
      await this.store.delete(key, revision).catch(() => undefined);
    }
  }
}

/**
 * Runs the type's allocation for an object about to be stored at `key` (`old`:
 * the stored object on update); returns the claims made, to revert when the
 * write fails. Undefined when the type claims nothing.
 */
export async function allocateClaims(
  ctx: StoreContext,
  key: string,
  obj: KubeObject,
  old: KubeObject | undefined,
  dryRun: boolean,
): Promise<WriteClaims | undefined> {
  const rules = ctx.def.strategy.claims;
  if (!rules) return undefined;
  const claims = new WriteClaims(ctx.services.store, key, obj.metadata.uid ?? "", dryRun);
  try {
    await rules.allocate(obj, old, claims);
  } catch (err) {
    await claims.revert();
    throw statusFromStorage(err, ctx.subject);
  }
  return claims;
}

/**
 * Releases the claims `old` held and `next` (null: the object is gone) does not,
 * each only while it is still recorded as this object's. Never throws: a claim
 * left behind is the repair loop's to collect.
 */
export async function releaseClaims(
  ctx: StoreContext,
  key: string,
  old: KubeObject | null | undefined,
  next: KubeObject | null,
): Promise<void> {
  const rules: ClaimRules | undefined = ctx.def.strategy.claims;
  if (!rules || !old) return;
  const keep = new Set(next ? rules.heldBy(next) : []);
  const uid = old.metadata.uid ?? "";
  for (const name of rules.heldBy(old)) {
    if (keep.has(name)) continue;
    await releaseIfHeld(ctx.services.store, name, key, uid);
  }
}

/** Deletes the claim `name` if `holder` (with `uid`) holds it. Never throws. */
export async function releaseIfHeld(
  store: Store,
  name: string,
  holder: string,
  uid: string,
): Promise<void> {
  try {
    const kv = await store.get(CLAIMS_ROOT + name);
    const record = kv ? parseClaim(kv.value) : undefined;
    if (!kv || !record || record.holder !== holder || record.uid !== uid) return;
    await store.delete(kv.key, kv.modRevision);
  } catch {
    // Left for the repair loop.
  }
}
