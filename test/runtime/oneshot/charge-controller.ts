/**
 * A controller that charges each Order once through runOneShot: the "charge"
 * action (retry "idempotent") POSTs to an endpoint that honours
 * Idempotency-Key, and "notify" (retry "unsafe", for Orders that ask for it)
 * POSTs to one that does not. `crash(point, order)` is called at every step, so
 * tests can stop the controller there (by throwing, or by killing the process).
 */
import type { Condition, KubeObject } from "@setpoint/api";
import {
  ActionRefusedError,
  isNotFound,
  isTerminalError,
  kind,
  type Manager,
  runOneShot,
  setErrorCondition,
  setStatusCondition,
  updateStatusIfChanged,
} from "@setpoint/runtime";

export interface Order extends KubeObject {
  spec: { amount: number; notify?: boolean; once?: boolean };
  status?: { chargeId?: string; observedGeneration?: number; conditions?: Condition[] };
}

export const OrderKind = kind<Order>("example.com/v1", "Order");

/** The steps a controller can stop at. */
export const CRASH_POINTS = ["before-intent", "before-call", "after-call", "after-record"] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface ChargeControllerOptions {
  /** The idempotency server's base URL. */
  url: string;
  /** `action`: the one-shot action the step belongs to ("charge" for the steps outside one). */
  crash(point: CrashPoint, order: Order, action: "charge" | "notify"): void;
}

async function post(url: string, key: string, body: unknown, signal: AbortSignal): Promise<string> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  if (res.status === 400 || res.status === 422) {
    throw new ActionRefusedError(`${url} answered ${res.status}: ${text}`);
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

export function addChargeController(mgr: Manager, opts: ChargeControllerOptions): void {
  mgr
    .controller("orders")
    .for(OrderKind)
    .complete(async (req, ctx) => {
      let order: Order;
      try {
        order = await ctx.reader.get(OrderKind, req.name, req.namespace);
      } catch (e) {
        if (isNotFound(e)) return;
        throw e;
      }
      opts.crash("before-intent", order, "charge");
      let current: Order = order;
      try {
        // #region one-shot
        const charge = await runOneShot(ctx.client, order, {
          name: "charge",
          retry: "idempotent",
          // Once per Order when asked, otherwise once per generation (the default).
          discriminator: order.spec.once ? "once" : undefined,
          call: async (key, signal) => {
            opts.crash("before-call", order, "charge");
            const id = await post(
              `${opts.url}/charges`,
              key,
              { order: order.metadata.uid, amount: order.spec.amount },
              signal,
            );
            opts.crash("after-call", order, "charge");
            return id;
          },
        });
        current = charge.object; // the object as the helper last wrote it
        // #endregion
        if (order.spec.notify) {
          const sent = await runOneShot(ctx.client, current, {
            name: "notify",
            retry: "unsafe",
            check: "the plain endpoint's log for a notice of this Order",
            call: async (key, signal) => {
              opts.crash("before-call", order, "notify");
              const id = await post(
                `${opts.url}/plain`,
                key,
                { order: order.metadata.uid },
                signal,
              );
              opts.crash("after-call", order, "notify");
              return id;
            },
          });
          current = sent.object;
        }
        opts.crash("after-record", order, "charge");
        const next = structuredClone(current);
        next.status = {
          ...next.status,
          chargeId: charge.result,
          observedGeneration: order.metadata.generation,
        };
        setStatusCondition(next, { type: "Charged", status: "True", reason: "Charged" });
        await updateStatusIfChanged(ctx.client, current, next.status);
      } catch (e) {
        if (isTerminalError(e)) {
          // The helper may have written the object since it was read: write status on a fresh copy.
          const fresh = await ctx.client.get(OrderKind, req.name, req.namespace);
          const next = structuredClone(fresh);
          setErrorCondition(next, e, { type: "Charged" });
          await updateStatusIfChanged(ctx.client, fresh, next.status ?? {});
        }
        throw e;
      }
    });
}
