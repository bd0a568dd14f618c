/** Opens the Store a command was asked for: embedded SQLite (default) or etcd. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Store } from "../storage/store.ts";

export interface StorageFlags {
  storage: string;
  dataDir: string;
  etcdEndpoints: string | undefined;
  etcdPrefix: string;
}

/** File name of the SQLite database inside the data dir. */
export const SQLITE_FILE = "state.db";

export async function openStore(f: StorageFlags): Promise<Store> {
  switch (f.storage) {
    case "sqlite": {
      mkdirSync(f.dataDir, { recursive: true, mode: 0o700 });
      // Backends are loaded on demand: each pulls in its own driver.
      const { SqliteStore } = await import("../storage/sqlite/index.ts");
      return SqliteStore.open(join(f.dataDir, SQLITE_FILE));
    }
    case "etcd": {
      const endpoints = (f.etcdEndpoints ?? "")
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean);
      if (endpoints.length === 0) {
        throw new UsageError("--storage etcd needs --etcd-endpoints URL[,URL...]");
      }
      const { EtcdStore } = await import("../storage/etcd/index.ts");
      return EtcdStore.open({ endpoints, prefix: f.etcdPrefix });
    }
    default:
      throw new UsageError(`unknown --storage ${JSON.stringify(f.storage)}: use sqlite or etcd`);
  }
}

/** A mistake in how a command was called: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
