/**
 * JSON merge patch (RFC 7386), the `application/merge-patch+json` patch type: objects
 * merge member by member, `null` removes a member, anything else (arrays included)
 * replaces the target value whole.
 */
import { deepClone, deepEqual, isJsonObject, setMember } from "../deep-copy.ts";

/**
 * Applies a merge patch to `target` and returns the result; neither input is
 * changed and the result shares no objects with them. A patch that is not an
 * object replaces the target (so the caller must check the result is still an
 * object where one is required).
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return deepClone(patch);
  const base = isJsonObject(target) ? target : {};
  const out: Record<string, unknown> = {};
  // The target's members keep their order; new members follow in patch order.
  for (const k of Object.keys(base)) {
    if (!Object.hasOwn(patch, k)) setMember(out, k, deepClone(base[k]));
    else if (patch[k] !== null) setMember(out, k, applyMergePatch(base[k], patch[k]));
  }
  for (const k of Object.keys(patch)) {
    if (!Object.hasOwn(base, k) && patch[k] !== null) {
      setMember(out, k, applyMergePatch(undefined, patch[k]));
    }
  }
  return out;
}

/**
 * The merge patch that turns `original` into `modified`: changed and new members,
 * `null` for removed ones, objects diffed recursively, everything else whole.
 * `applyMergePatch(original, createMergePatch(original, modified))` equals
 * `modified` whenever `modified` holds no `null` member values (RFC 7386 cannot
 * express those).
 */
export function createMergePatch(original: unknown, modified: unknown): unknown {
  if (!isJsonObject(original) || !isJsonObject(modified)) return deepClone(modified);
  const patch: Record<string, unknown> = {};
  for (const k of Object.keys(original)) {
    if (!Object.hasOwn(modified, k)) setMember(patch, k, null);
  }
  for (const k of Object.keys(modified)) {
    const m = modified[k];
    if (!Object.hasOwn(original, k)) {
      setMember(patch, k, deepClone(m));
      continue;
    }
    const o = original[k];
    if (deepEqual(o, m)) continue;
    setMember(patch, k, isJsonObject(o) && isJsonObject(m) ? createMergePatch(o, m) : deepClone(m));
  }
  return patch;
}
