// Whether dist/ (built by scripts/build.mjs) is newer than every source file. An
// installed package (from `npm pack`) ships dist/ without the sources: its bundle is
// fresh as long as it exists.
import { existsSync, readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = new URL("../", import.meta.url);

/** The bundle the `setpoint` command runs when it is fresh. */
export const BUNDLE = new URL("dist/setpoint.mjs", root);

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = `${dir}${entry.name}`;
    latest = Math.max(latest, entry.isDirectory() ? newest(`${path}/`) : statSync(path).mtimeMs);
  }
  return latest;
}

export function bundleIsFresh() {
  try {
    const sources = ["src/", "packages/api/src/", "packages/runtime/src/"]
      .map((dir) => fileURLToPath(new URL(dir, root)))
      .filter((dir) => existsSync(dir));
    const latest = Math.max(0, ...sources.map((dir) => newest(dir)));
    return statSync(BUNDLE).mtimeMs >= latest;
  } catch {
    return false;
  }
}
