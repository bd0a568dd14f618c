/**
 * One-shot side effects from a reconciler: sending an email, charging a card,
 * calling a webhook. A level (desired state) cannot describe them, so they need
 * a record and an idempotency key:
 *
 * 1. the intent is recorded on the object (an annotation,
 *    `oneshot.setpoint.dev/<action>`) before the call, guarded by the object's
 *    resourceVersion, so two writers cannot both start it;
 * 2. the call gets a stable idempotency key: the object's UID, the action's
 *    name, and the generation (or a discriminator the caller gives);
 * 3. the outcome is recorded after the call, under the same annotation.
 *
 * A crash between 2 and 3 leaves the intent recorded: the next pass finds it
 * and calls again with the same key (`retry: "idempotent"`: the far end
 * answers a repeated key with the first answer), or, for a call that does not
 * honour keys (`retry: "unsafe"`), stops with a TerminalError that names the
 * key and what a person must check, instead of guessing.
 *
 * Why an annotation and not a status field: the record is not an observation
 * of the world that a controller could rebuild, it is the only memory that the
 * effect happened. Status is dropped by backup and restore tools and may be
 * rebuilt from scratch by a controller; metadata is kept. An annotation also
 * works on every kind (no schema change), and writing it does not move the
 * generation.
 */

import type { KubeObject } from "@setpoint/api";
import { nowTimestamp } from "@setpoint/api";
import type { GetOptions, PatchOptions, TypeRef } from "../client/client.ts";
import { isConflict } from "../client/errors.ts";
import type { Kind } from "../client/kind.ts";
import { TerminalError } from "../controller/reconciler.ts";

/** The annotation of action NAME is `${ONE_SHOT_ANNOTATION_PREFIX}NAME`. */
export const ONE_SHOT_ANNOTATION_PREFIX = "oneshot.setpoint.dev/";

/** The largest recorded result (JSON, in bytes); a larger result is not recorded. */
export const MAX_ONE_SHOT_RESULT_BYTES = 1024;

/** Longest discriminator. */
const MAX_DISCRIMINATOR = 100;

/** Attempts at recording the outcome when other writes to the object race it. */
const OUTCOME_WRITE_ATTEMPTS = 5;

/**
 * How a call may be repeated with the same key:
 * - `"idempotent"`: the far end honours the key (the same key does the work at
 *   most once, and a repeat answers as the first did), so a call whose outcome
 *   was not recorded is made again with the same key;
 * - `"unsafe"`: it does not, so a call whose outcome was not recorded stops
 *   with a TerminalError (reason `ActionOutcomeUnknown`) for a person to check.
 */
export type OneShotRetry = "idempotent" | "unsafe";

/** What the annotation holds (JSON). */
export interface OneShotRecord<R = unknown> {
  /** The idempotency key of the call this record is about. */
  key: string;
  /** Pending: called (or about to be), outcome not yet recorded. */
  state: "Pending" | "Succeeded" | "Failed";
  /** When the intent was recorded (RFC 3339). */
  startedAt?: string | undefined;
  /** When the outcome was recorded. */
  finishedAt?: string | undefined;
  /** What the call returned (when it fits MAX_ONE_SHOT_RESULT_BYTES). */
  result?: R | undefined;
  /** Why it failed. */
  message?: string | undefined;
}

/** An action to perform once. */
export interface OneShotAction<R> {
  /** Lower case letters, digits and '-' (at most 40): part of the key and of the annotation's name. */
  name: string;
  /**
   * What makes a new performance of the action: by default `generation-N`
   * (once per spec change); give a constant (e.g. "first-ready") for once per
   * object, or anything stable that names the occasion (printable ASCII, no spaces).
   */
  discriminator?: string | undefined;
  retry: OneShotRetry;
  /**
   * Performs the action, sending `key` as its idempotency key. Everything it
   * sends must depend only on what the key names (the repeat of a call must be
   * the same request). Its value (JSON) is recorded. Throw ActionRefusedError when
   * the far end refused for good, ActionNotPerformedError when it certainly did
   * nothing; any other error leaves the outcome unknown.
   */
  call(key: string, signal: AbortSignal): Promise<R>;
  /**
   * For `retry: "unsafe"`: where a person checks whether the call took effect
   * (e.g. "the mail server's log for the message-id"), quoted in the error.
   */
  check?: string | undefined;
}

/** The far end refused the call, and repeating it will not help: recorded as Failed. */
export class ActionRefusedError extends Error {
  override name = "ActionRefusedError";
}

/** The call certainly had no effect (e.g. the connection was refused): the intent is withdrawn and the call retried. */
export class ActionNotPerformedError extends Error {
  override name = "ActionNotPerformedError";
}

/** What runOneShot did. */
export interface OneShotOutcome<T extends KubeObject, R> {
  key: string;
  /** The recorded result (undefined when none was recorded, e.g. too large, or set by hand). */
  result: R | undefined;
  /** Whether this run called (false: the outcome was already recorded). */
  called: boolean;
  /** The object as last read or written (pass it on to later writes). */
  object: T;
}

/** The client calls runOneShot makes (a Client or a reconcile's client). */
export interface OneShotClient {
  get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
    opts?: GetOptions,
  ): Promise<T>;
  patch<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions,
  ): Promise<T>;
}

/** The annotation that records action `name`. */
export function oneShotAnnotation(name: string): string {
  return `${ONE_SHOT_ANNOTATION_PREFIX}${name}`;
}

/** The idempotency key of `action` on `obj`. */
export function oneShotKey(
  obj: KubeObject,
  action: Pick<OneShotAction<unknown>, "name" | "discriminator">,
): string {
  checkName(action.name);
  const uid = obj.metadata.uid;
  if (!uid)
    throw new TypeError("runOneShot: the object has no metadata.uid (read it from the server)");
  let disc = action.discriminator;
  if (disc === undefined) {
    const gen = obj.metadata.generation;
    if (gen === undefined) {
      throw new TypeError(
        `runOneShot: ${obj.kind ?? "the object"} has no metadata.generation; give the action a discriminator`,
      );
    }
    disc = `generation-${gen}`;
  }
  if (disc.length === 0 || disc.length > MAX_DISCRIMINATOR || !/^[!-~]+$/.test(disc)) {
    throw new TypeError(
      `runOneShot: discriminator ${JSON.stringify(disc)} must be 1 to ${MAX_DISCRIMINATOR} printable ASCII characters without spaces`,
    );
  }
  return `${uid}/${action.name}/${disc}`;
}

/** The record of action `name` on `obj`; undefined when none; throws TerminalError when unreadable. */
export function readOneShotRecord<R = unknown>(
  obj: KubeObject,
  name: string,
): OneShotRecord<R> | undefined {
  const annotation = oneShotAnnotation(name);
  const raw = obj.metadata.annotations?.[annotation];
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const rec = parsed as OneShotRecord<R> | undefined;
  if (
    !rec ||
    typeof rec !== "object" ||
    typeof rec.key !== "string" ||
    !["Pending", "Succeeded", "Failed"].includes(rec.state)
  ) {
    throw new TerminalError(
      `annotation ${annotation} is not a one-shot record ({"key":"...","state":"Pending|Succeeded|Failed"}): fix it or remove it (removing it performs the action again)`,
      { reason: "ActionRecordInvalid" },
    );
  }
  return rec;
}

function checkName(name: string): void {
  if (!/^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/.test(name)) {
    throw new TypeError(
      `runOneShot: action name ${JSON.stringify(name)} must be lower case letters, digits and '-' (at most 40)`,
    );
  }
}

function describe(obj: KubeObject): string {
  const ns = obj.metadata.namespace;
  return `${obj.kind ?? "object"} ${ns ? `${ns}/` : ""}${obj.metadata.name ?? ""}`;
}

function typeRef<T extends KubeObject>(obj: T): Kind<T> {
  if (!obj.apiVersion || !obj.kind)
    throw new TypeError("runOneShot: the object has no apiVersion/kind");
  const t: TypeRef = { apiVersion: obj.apiVersion, kind: obj.kind };
  return t as Kind<T>;
}

/**
 * Performs `action` once for `obj`: records the intent on the object, calls
 * with a stable idempotency key, records the outcome, and returns it. Called
 * again (the next pass, after a crash, on a duplicate event) it returns the
 * recorded outcome without calling, or finishes what a crash interrupted.
 * Throws TerminalError (reason `ActionOutcomeUnknown`, `ActionRefused` or
 * `ActionRecordInvalid`) when only a person can decide; other errors are retried
 * by the controller as usual (the next attempt uses the same key).
 *
 * `obj` may come from the cache: a recorded success is taken from it, anything
 * else is decided on a fresh read from the server.
 */
export async function runOneShot<T extends KubeObject, R>(
  client: OneShotClient,
  obj: T,
  action: OneShotAction<R>,
  opts: { signal?: AbortSignal | undefined } = {},
): Promise<OneShotOutcome<T, R>> {
  const key = oneShotKey(obj, action);
  const annotation = oneShotAnnotation(action.name);
  const cached = readOneShotRecord<R>(obj, action.name);
  if (cached?.key === key && cached.state === "Succeeded") {
    return { key, result: cached.result, called: false, object: obj };
  }
  const type = typeRef(obj);
  const { name, namespace } = obj.metadata;
  let current = await client.get<T>(type, name ?? "", namespace);
  if (current.metadata.uid !== obj.metadata.uid) {
    throw new Error(`runOneShot: ${describe(obj)} was replaced (its uid changed); reconcile again`);
  }
  const record = readOneShotRecord<R>(current, action.name);
  if (record?.key === key) {
    if (record.state === "Succeeded")
      return { key, result: record.result, called: false, object: current };
    if (record.state === "Failed") {
      throw new TerminalError(
        `action ${action.name} (idempotency key ${key}) was refused: ${record.message ?? "no reason recorded"}; ` +
          `fix the cause, then remove annotation ${annotation} to try again`,
        { reason: "ActionRefused" },
      );
    }
  }
  if (record?.state === "Pending" && action.retry === "unsafe") {
    throw new TerminalError(
      `the outcome of action ${action.name} on ${describe(current)} is unknown: it was started at ` +
        `${record.startedAt ?? "an unrecorded time"} with idempotency key ${record.key} and no outcome was recorded, ` +
        `and it is not safe to repeat. Check ${action.check ?? "whether it took effect"}; if it did, set the state ` +
        `in annotation ${annotation} to "Succeeded", otherwise remove the annotation to perform it again`,
      { reason: "ActionOutcomeUnknown" },
    );
  }
  let pending: string;
  if (record?.key === key) {
    // Pending with this key: a crash came between the call and its record. Call again, same key.
    pending = current.metadata.annotations?.[annotation] ?? "";
  } else {
    // Record the intent, guarded by the resourceVersion read above: of two writers, one wins.
    const intent: OneShotRecord<R> = { key, state: "Pending", startedAt: nowTimestamp(new Date()) };
    pending = JSON.stringify(intent);
    current = await client.patch<T>(
      type,
      name ?? "",
      namespace,
      {
        metadata: {
          resourceVersion: current.metadata.resourceVersion,
          annotations: { [annotation]: pending },
        },
      },
      { type: "merge", signal: opts.signal },
    );
  }

  let result: R;
  try {
    result = await action.call(key, opts.signal ?? new AbortController().signal);
  } catch (e) {
    if (e instanceof ActionRefusedError) {
      const failed: OneShotRecord<R> = {
        key,
        state: "Failed",
        finishedAt: nowTimestamp(new Date()),
        message: e.message,
      };
      await recordOutcome(
        client,
        current,
        type,
        annotation,
        pending,
        JSON.stringify(failed),
        opts.signal,
      );
      throw new TerminalError(
        `action ${action.name} (idempotency key ${key}) was refused: ${e.message}; ` +
          `fix the cause, then remove annotation ${annotation} to try again`,
        { reason: "ActionRefused", cause: e },
      );
    }
    if (e instanceof ActionNotPerformedError) {
      await recordOutcome(client, current, type, annotation, pending, null, opts.signal);
    }
    throw e;
  }
  const done: OneShotRecord<R> = { key, state: "Succeeded", finishedAt: nowTimestamp(new Date()) };
  if (
    result !== undefined &&
    Buffer.byteLength(JSON.stringify(result)) <= MAX_ONE_SHOT_RESULT_BYTES
  ) {
    done.result = result;
  }
  const object = await recordOutcome(
    client,
    current,
    type,
    annotation,
    pending,
    JSON.stringify(done),
    opts.signal,
  );
  return { key, result, called: true, object };
}

/**
 * Replaces the pending record with `value` (null: removes it), as long as the
 * annotation still holds `pending`: other writes to the object in between are
 * fine (read again, write again), a changed record is not.
 */
async function recordOutcome<T extends KubeObject>(
  client: OneShotClient,
  current: T,
  type: Kind<T>,
  annotation: string,
  pending: string,
  value: string | null,
  signal: AbortSignal | undefined,
): Promise<T> {
  const { name, namespace } = current.metadata;
  let obj = current;
  for (let attempt = 1; ; attempt++) {
    if (obj.metadata.annotations?.[annotation] !== pending) {
      throw new Error(
        `the record in annotation ${annotation} of ${describe(obj)} changed while the action ran; reconcile again`,
      );
    }
    try {
      return await client.patch<T>(
        type,
        name ?? "",
        namespace,
        {
          metadata: {
            resourceVersion: obj.metadata.resourceVersion,
            annotations: { [annotation]: value },
          },
        },
        { type: "merge", signal },
      );
    } catch (e) {
      if (!isConflict(e) || attempt >= OUTCOME_WRITE_ATTEMPTS) throw e;
    }
    obj = await client.get<T>(type, name ?? "", namespace, { signal });
  }
}
