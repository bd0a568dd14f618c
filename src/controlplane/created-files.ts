/**
 * What one start of the control plane created on disk (the data dir itself, its
 * certificates, tokens, SQLite file), so that a start that fails takes back exactly
 * that and leaves no half-made data dir: a failed first start leaves nothing, a
 * failed restart leaves the data dir as it found it. Only paths this start made are
 * recorded, never files that were there before (another process may own them).
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync } from "node:fs";

export class CreatedFiles {
  #files: string[] = [];
  #dirs: string[] = [];

  /** Records files this start created. */
  add(...paths: string[]): void {
    this.#files.push(...paths);
  }

  /** Makes `dir` (owner-only) if it does not exist, recording it if it was made here. */
  mkdir(dir: string): void {
    if (existsSync(dir)) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#dirs.push(dir);
  }

  /** Removes what was recorded: the files, then each recorded dir if it is empty. */
  rollback(): void {
    for (const f of this.#files.reverse()) rmSync(f, { force: true });
    for (const d of this.#dirs.reverse()) {
      try {
        if (readdirSync(d).length === 0) rmdirSync(d);
      } catch {
        // Gone already, or not ours to judge: leave it.
      }
    }
    this.#files = [];
    this.#dirs = [];
  }

  /** Forgets everything recorded: the start succeeded and the files stay. */
  commit(): void {
    this.#files = [];
    this.#dirs = [];
  }
}
