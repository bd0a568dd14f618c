#!/usr/bin/env node
// Entry point of the `setpoint` command. Runs the bundle in dist/ (see
// scripts/build.mjs) when it is newer than every source file; otherwise runs the
// TypeScript sources through tsx, so an edit never runs stale code.
import { BUNDLE, bundleIsFresh } from "../scripts/fresh.mjs";

let main;
if (process.env.SETPOINT_FROM_SOURCE !== "1" && bundleIsFresh()) {
  ({ main } = await import(BUNDLE.href));
} else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../src/cli/main.ts"));
}
process.exitCode = await main(process.argv.slice(2));
