/**
 * The service table on disk: `services.json` in the agent's data directory,
 * written atomically (temporary file, fsync, rename, fsync of the directory),
 * read at start before the apiserver is asked anything.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../dataplane/index.ts";
import { SERVICE_TABLE_VERSION, type ServiceTable } from "./table.ts";

export const SERVICE_TABLE_FILE = "services.json";

/** Writes the table to `dir`/services.json atomically. */
export function saveServiceTable(dir: string, table: ServiceTable): void {
  writeFileAtomic(join(dir, SERVICE_TABLE_FILE), JSON.stringify(table), { syncDir: true });
}

/** The table saved in `dir`, undefined when there is none; throws when it is unreadable. */
export function loadServiceTable(dir: string): ServiceTable | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, SERVICE_TABLE_FILE), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const t = JSON.parse(text) as ServiceTable;
  if (t?.version !== SERVICE_TABLE_VERSION || !Array.isArray(t.services)) {
    throw new Error(
      `${join(dir, SERVICE_TABLE_FILE)} is not a version ${SERVICE_TABLE_VERSION} service table`,
    );
  }
  return t;
}
