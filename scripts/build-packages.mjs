#!/usr/bin/env node
// Builds the workspace packages (packages/api as @setpoint/api, packages/runtime as
// @setpoint/runtime) into each package's dist/: JavaScript and type declarations
// compiled by tsc from the package's tsconfig.build.json, in dependency order (the
// runtime's build reads the api's declarations through its package name, as a
// consumer does). tsc rewrites the sources' relative `.ts` imports to `.js` in the
// JavaScript but not in the declarations, so they are rewritten here: a consumer's
// type check reads them without `allowImportingTsExtensions`. Runs on `npm install`
// (prepare) before the command's bundle.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

/** The packages, each after the ones it depends on. */
export const PACKAGES = ["api", "runtime"];

const RELATIVE_TS = /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*)\.ts(["'])/g;

/** Rewrites relative `.ts` specifiers to `.js` in every declaration file under dir. */
export function rewriteDeclarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".d.ts")) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, "utf8");
    const rewritten = text.replace(RELATIVE_TS, "$1$2.js$3");
    if (rewritten !== text) writeFileSync(path, rewritten);
  }
}

/** Builds every package in PACKAGES; exits the process on a compile error. */
function buildPackages() {
  for (const name of PACKAGES) {
    const dir = join(root, "packages", name);
    rmSync(join(dir, "dist"), { recursive: true, force: true });
    const run = spawnSync(process.execPath, [tsc, "-p", join(dir, "tsconfig.build.json")], {
      stdio: "inherit",
    });
    if (run.status !== 0) {
      console.error(`building packages/${name} failed`);
      process.exit(run.status ?? 1);
    }
    rewriteDeclarations(join(dir, "dist"));
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) buildPackages();
