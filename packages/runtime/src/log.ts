/**
 * Structured logs (pino). Every controller logs through a child logger bound to
 * its name; every reconcile through a child bound to the key (`namespace/name`),
 * the object's namespace and name, and a fresh reconcile id, so one pass can be
 * followed across lines and correlated with its metrics and Events.
 */
import { type Logger, pino } from "pino";

export type { Logger } from "pino";

/** Environment variable that sets the default log level ("info" when unset). */
export const LOG_LEVEL_ENV = "SETPOINT_LOG_LEVEL";

export interface LoggerOptions {
  /** pino level, or "silent"; defaults to $SETPOINT_LOG_LEVEL, then "info". */
  level?: string | undefined;
  /** Bound as `name` on every line. */
  name?: string | undefined;
}

/** A JSON logger writing to stdout. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? process.env[LOG_LEVEL_ENV] ?? "info";
  return pino({ level, name: opts.name });
}

/** A logger that discards everything (the default when none is given to a component). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/** The key of a request: "namespace/name", or "name" for cluster-scoped objects. */
export function requestKey(req: { namespace?: string | undefined; name: string }): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}

/** A controller's logger: every line carries `controller`. */
export function controllerLogger(root: Logger, controller: string): Logger {
  return root.child({ controller });
}

/** One reconcile's logger: every line carries `key`, `namespace`, `name` and `reconcileID`. */
export function reconcileLogger(
  controllerLog: Logger,
  req: { namespace?: string | undefined; name: string },
  reconcileID: string,
): Logger {
  const bindings: Record<string, string> = { key: requestKey(req), name: req.name, reconcileID };
  if (req.namespace) bindings.namespace = req.namespace;
  return controllerLog.child(bindings);
}
