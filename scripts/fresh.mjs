// Whether dist/ (built by scripts/build.mjs) is newer than every source file.
import { readdirSync, statSync } from "node:fs";
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
    const sources = ["src/", "packages/api/src/", "packages/runtime/src/"];
    const latest = Math.max(...sources.map((dir) => newest(fileURLToPath(new URL(dir, root)))));
    return statSync(BUNDLE).mtimeMs >= latest;
  } catch {
    return false;
  }
}
