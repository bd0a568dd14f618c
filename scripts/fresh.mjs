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
    return statSync(BUNDLE).mtimeMs >= newest(fileURLToPath(new URL("src/", root)));
  } catch {
    return false;
  }
}
