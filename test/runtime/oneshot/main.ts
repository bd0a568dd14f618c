/**
 * The charge controller as a process of its own:
 *   node --import tsx main.ts KUBECONFIG URL MARKER_DIR [NAME=POINT,...]
 * It kills itself (SIGKILL: no cleanup, no last write) the first time Order NAME
 * reaches POINT, leaving a marker file so the next process goes past it.
 */
import fs from "node:fs";
import path from "node:path";
import { loadKubeconfig, Manager, silentLogger } from "@setpoint/runtime";
import { addChargeController, type CrashPoint } from "./charge-controller.ts";

const [kubeconfig, url, markers, spec = ""] = process.argv.slice(2);
const crashes = new Map<string, CrashPoint>();
for (const part of spec.split(",").filter(Boolean)) {
  const [name, point] = part.split("=");
  crashes.set(name, point as CrashPoint);
}

const mgr = new Manager({
  restConfig: loadKubeconfig({ path: kubeconfig }),
  logger: silentLogger(),
});
addChargeController(mgr, {
  url,
  crash(point, order) {
    const name = order.metadata.name ?? "";
    if (crashes.get(name) !== point) return;
    const marker = path.join(markers, `${name}-${point}`);
    if (fs.existsSync(marker)) return;
    fs.writeFileSync(marker, "");
    process.stdout.write(`crash ${name} ${point}\n`);
    process.kill(process.pid, "SIGKILL");
  },
});
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());
await mgr.start(stop.signal);
process.stdout.write("ready\n");
await mgr.done;
