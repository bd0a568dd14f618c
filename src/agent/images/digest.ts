/**
 * The content digest of an image: sha256 of a canonical listing of its tree, one
 * line per entry in byte order of the path (directories; files with their
 * executable bit and the sha256 of their content; symbolic links with their
 * target). Timestamps, owners and the order a file system lists entries in do
 * not count, so the same tree gives the same digest on every machine.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

function walk(root: string, rel: string, lines: string[]): void {
  const names = readdirSync(join(root, rel)).sort((a, b) =>
    Buffer.compare(Buffer.from(a), Buffer.from(b)),
  );
  for (const name of names) {
    const path = rel ? `${rel}/${name}` : name;
    const full = join(root, path);
    const st = lstatSync(full);
    if (st.isSymbolicLink()) {
      lines.push(`L ${JSON.stringify(path)} ${JSON.stringify(readlinkSync(full))}`);
    } else if (st.isDirectory()) {
      lines.push(`D ${JSON.stringify(path)}`);
      walk(root, path, lines);
    } else if (st.isFile()) {
      const sum = createHash("sha256").update(readFileSync(full)).digest("hex");
      lines.push(`F ${JSON.stringify(path)} ${st.mode & 0o111 ? "x" : "-"} ${sum}`);
    }
  }
}

/** "sha256:<hex>" of the tree at `dir`. */
export function treeDigest(dir: string): string {
  const lines: string[] = [];
  walk(dir, "", lines);
  return `sha256:${createHash("sha256").update(lines.join("\n")).digest("hex")}`;
}
