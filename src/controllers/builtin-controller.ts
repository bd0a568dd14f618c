/**
 * What every built-in controller looks like to the controller manager: a name
 * it can be switched off by, and a `setup` that registers its parts with the
 * runtime Manager: its loops (which run only while the manager leads) and what
 * runs beside them, leader or not (discovery, side informers), as runnables
 * whose lifecycle and readiness the Manager owns.
 */
import type { Client, Manager } from "@setpoint/runtime";

export interface BuiltinController {
  /** The name `--disable` takes. */
  readonly name: string;
  /** Registers controllers, runnables, health checks and metrics with `mgr` (before it starts). */
  setup(mgr: Manager, client?: Client): void;
}
