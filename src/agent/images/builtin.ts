/**
 * The demo images shipped with Setpoint (the package's images/ folder): imported
 * into a store when the agent starts, so a quick start runs them offline with no
 * build step. Building is deterministic, so the digest is the same everywhere and
 * importing again changes nothing.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ImageStore } from "./store.ts";

/** Each shipped image: its folder under images/ and the tags it gets. */
export const BUILTIN_IMAGES: readonly { dir: string; tags: readonly string[] }[] = [
  { dir: "hello", tags: ["hello:latest", "hello:1.0", "hello:2.0"] },
];

/** The package's images/ folder, found from this module (sources or dist/). */
export function builtinImagesDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, "images");
    if (existsSync(join(candidate, "hello", "setpoint-image.json"))) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** Stores the shipped images and tags them, unless their tags already point somewhere. */
export function importBuiltinImages(store: ImageStore): string[] {
  const root = builtinImagesDir();
  if (!root) return [];
  const tags = store.tags();
  const imported: string[] = [];
  for (const image of BUILTIN_IMAGES) {
    const missing = image.tags.filter((t) => !tags[t]);
    if (missing.length === 0) continue;
    store.build(join(root, image.dir), missing);
    imported.push(...missing);
  }
  return imported;
}
