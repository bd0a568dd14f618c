#!/usr/bin/env node
// Entry point of the `setpoint` command. Runs the bundle in dist/ (see
// scripts/build.mjs) when it is newer than every source file; otherwise (or if the
// bundle cannot be loaded, e.g. while a build replaces it) runs the TypeScript
// sources through tsx, so an edit never runs stale code.
import { fileURLToPath } from "node:url";
import { BUNDLE, bundleIsFresh } from "../scripts/fresh.mjs";

async function load() {
  if (process.env.SETPOINT_FROM_SOURCE !== "1" && bundleIsFresh()) {
    try {
      return (await import(BUNDLE.href)).main;
    } catch {
      // fall through to the sources
    }
  }
  const { register } = await import("tsx/esm/api");
  // The repository's tsconfig maps the workspace packages (@setpoint/api, @setpoint/runtime)
  // to their sources, wherever the command is run from.
  register({ tsconfig: fileURLToPath(new URL("../tsconfig.json", import.meta.url)) });
  return (await import("../src/cli/main.ts")).main;
}

const main = await load();
process.exitCode = await main(process.argv.slice(2));
