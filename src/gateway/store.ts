/**
 * The route table on disk: `routes.json` in the data directory, written
 * atomically (a temporary file, fsync, rename over the old one, fsync of the
 * directory) so a crash leaves either the old table or the new one, never half
 * of one. It holds TLS keys, so it is readable by its owner only.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../dataplane/index.ts";
import { type RouteTable, TABLE_VERSION } from "./table.ts";

export const TABLE_FILE = "routes.json";

/** Writes the table to `dir`/routes.json atomically. */
export function saveTable(dir: string, table: RouteTable): void {
  writeFileAtomic(join(dir, TABLE_FILE), JSON.stringify(table), {
    mode: 0o600,
    dirMode: 0o700,
    syncDir: true,
  });
}

/** The table saved in `dir`, undefined when there is none; throws when it is unreadable. */
export function loadTable(dir: string): RouteTable | undefined {
  let text: string;
  try {
    text = readFileSync(join(dir, TABLE_FILE), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const t = JSON.parse(text) as RouteTable;
  if (t?.version !== TABLE_VERSION || !Array.isArray(t.routes) || typeof t.backends !== "object") {
    throw new Error(`${join(dir, TABLE_FILE)} is not a version ${TABLE_VERSION} route table`);
  }
  return t;
}
