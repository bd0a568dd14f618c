/**
 * The route table on disk: `routes.json` in the data directory, written
 * atomically (a temporary file, fsync, rename over the old one, fsync of the
 * directory) so a crash leaves either the old table or the new one, never half
 * of one. It holds TLS keys, so it is readable by its owner only.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { type RouteTable, TABLE_VERSION } from "./table.ts";

export const TABLE_FILE = "routes.json";

/** Writes the table to `dir`/routes.json atomically. */
export function saveTable(dir: string, table: RouteTable): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const final = join(dir, TABLE_FILE);
  const tmp = `${final}.tmp-${process.pid}`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify(table));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, final);
  const dfd = openSync(dir, "r");
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
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
