/**
 * The `setpoint` package's version, from its package.json: the nearest one above
 * this module named "setpoint" (the sources run from src/cli/, the bundle from dist/).
 */
import { readFileSync } from "node:fs";

export function setpointVersion(): string {
  for (let dir = new URL("./", import.meta.url); ; dir = new URL("../", dir)) {
    try {
      const json = JSON.parse(readFileSync(new URL("package.json", dir), "utf8"));
      if (json.name === "setpoint" && typeof json.version === "string") return json.version;
    } catch {
      // no package.json here
    }
    if (dir.pathname === "/") return "unknown";
  }
}
