/**
 * The failures a start of the control plane expects and can explain in one line:
 * the listen address is taken (or not ours to bind), the store is held by another
 * process, etcd cannot be reached. Each carries what a person needs to act (the
 * address, the pid, the endpoints); the command line adds which flag changes it.
 * Anything else that fails during a start is a bug and keeps its stack.
 */

/** Why a start failed, for the caller to name the flag that changes it. */
export type StartupFailure =
  /** The listen address is in use (EADDRINUSE). */
  | "address-in-use"
  /** The listen address cannot be bound: not local (EADDRNOTAVAIL) or not permitted (EACCES). */
  | "address-unavailable"
  /** The SQLite store in the data dir is open in another process. */
  | "store-locked"
  /** The SQLite store in the data dir cannot be opened (damaged, foreign, newer schema). */
  | "store-unusable"
  /** No etcd endpoint answered. */
  | "etcd-unreachable";

/** An expected startup failure: its message is the whole story, no stack needed. */
export class StartupError extends Error {
  override name = "StartupError";
  constructor(
    readonly failure: StartupFailure,
    message: string,
    /** What the failure is about: "HOST:PORT", the store's path, or the etcd endpoints. */
    readonly subject: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The StartupError for a failed listen, or undefined when `err` is another failure. */
export function listenFailure(err: unknown, host: string, port: number): StartupError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (code === "EADDRINUSE") {
    return new StartupError(
      "address-in-use",
      `${address} is already in use by another process`,
      address,
      { cause: err },
    );
  }
  if (code === "EADDRNOTAVAIL" || code === "EACCES") {
    const why = code === "EACCES" ? "permission denied" : "not an address of this machine";
    return new StartupError("address-unavailable", `cannot listen on ${address}: ${why}`, address, {
      cause: err,
    });
  }
  return undefined;
}
