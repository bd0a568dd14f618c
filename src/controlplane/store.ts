/**
 * Opens the control plane's store: SQLite (a file in the data dir, or in memory) or
 * etcd. The etcd backend (and its gRPC driver) is loaded only when asked for; SQLite,
 * the default, is imported up front (a dynamic import per start costs milliseconds
 * under a TypeScript loader, which the test environment pays on every start). Failures a
 * person can fix (the file is held by another process or unusable, etcd does not
 * answer) become StartupErrors naming the pid, the file or the endpoints tried.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { SqliteOpenError, SqliteStore } from "../storage/sqlite/index.ts";
import type { Store } from "../storage/store.ts";
import type { CreatedFiles } from "./created-files.ts";
import { StartupError } from "./errors.ts";

/** File name of the SQLite database inside the data dir. */
export const SQLITE_FILE = "state.db";

/** Where the control plane keeps its objects. */
export type StorageOptions =
  | {
      backend: "sqlite";
      /** true (default): `state.db` in the data dir; false: in memory, gone at stop. */
      file?: boolean;
      /** Wait for the disk at every commit (default true); see SqliteStoreOptions.durable. */
      durable?: boolean;
      /** Background compaction of old history (default true). */
      compaction?: boolean;
    }
  | {
      backend: "etcd";
      /** etcd client URLs; any members of one cluster. */
      endpoints: readonly string[];
      /** This installation's key prefix (default "/setpoint/"). */
      prefix?: string;
      /**
       * Compact etcd's history this often, to the revision of one interval earlier,
       * as kube-apiserver does (default 5 minutes; 0: never).
       */
      compactionIntervalMs?: number;
    };

/** Opens the store `opts` asks for; a new SQLite file is recorded in `created`. */
export async function openStore(
  opts: StorageOptions,
  dir: string,
  created: CreatedFiles,
): Promise<Store> {
  if (opts.backend === "etcd") {
    if (opts.endpoints.length === 0)
      throw new TypeError("etcd storage needs at least one endpoint");
    const { DEFAULT_COMPACTION_INTERVAL_MS, EtcdStore } = await import("../storage/etcd/index.ts");
    const { UnavailableError } = await import("../storage/errors.ts");
    try {
      return await EtcdStore.open({
        endpoints: [...opts.endpoints],
        prefix: opts.prefix ?? "/setpoint/",
        compactionIntervalMs: opts.compactionIntervalMs ?? DEFAULT_COMPACTION_INTERVAL_MS,
      });
    } catch (err) {
      if (!(err instanceof UnavailableError)) throw err;
      const tried = opts.endpoints.join(", ");
      throw new StartupError("etcd-unreachable", `cannot reach etcd at ${tried}`, tried, {
        cause: err,
      });
    }
  }
  const path = opts.file === false ? ":memory:" : join(dir, SQLITE_FILE);
  const isNew = path !== ":memory:" && !existsSync(path);
  let store: Store;
  try {
    store = SqliteStore.open(path, {
      ...(opts.durable === false ? { durable: false } : {}),
      ...(opts.compaction === false ? { compactionIntervalMs: 0 } : {}),
    });
  } catch (err) {
    if (!(err instanceof SqliteOpenError)) throw err;
    const failure = err.reason === "locked" ? "store-locked" : "store-unusable";
    throw new StartupError(failure, err.message, path, { cause: err });
  }
  // The file and its WAL companions are this start's to remove if the start fails.
  if (isNew) created.add(path, `${path}-wal`, `${path}-shm`);
  return store;
}
