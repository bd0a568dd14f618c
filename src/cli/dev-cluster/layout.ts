/**
 * Where every process of `setpoint dev-cluster` lives: its name, ports and
 * directories under the cluster's data dir. Ports are picked free on 127.0.0.1 at
 * the first start and kept in DIR/layout.json, so a restart on the same data dir
 * finds its etcd members where their data says they are (etcd records its peers'
 * URLs in its data dir).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/** How many of each process the cluster runs. */
export const ETCD_MEMBERS = 3;
export const APISERVERS = 2;
export const CONTROLLER_MANAGERS = 2;
export const AGENTS = 2;
/** The agents' Pod address ranges (127.N.x.y), one per agent, apart from `up`'s default 10. */
export const FIRST_POD_RANGE = 11;

/** The file in the data dir that keeps the layout. */
export const LAYOUT_FILE = "layout.json";

export interface EtcdMemberLayout {
  name: string;
  clientPort: number;
  peerPort: number;
}

export interface Layout {
  etcd: EtcdMemberLayout[];
  /** The apiservers' https ports. */
  apiservers: number[];
  /** The controller managers' /healthz ports. */
  controllerManagers: number[];
  /** The gateway's HTTP port, and its admin (/readyz) port. */
  gateway: { port: number; adminPort: number };
  /** The etcd cluster's token, so a restart does not join another cluster. */
  clusterToken: string;
}

/** A free TCP port on 127.0.0.1 (free when asked). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr && typeof addr === "object") resolve(addr.port);
        else reject(new Error("no free port"));
      });
    });
  });
}

/** The data dir's layout, made (with free ports) and saved on the first start. */
export async function loadOrCreateLayout(
  dir: string,
  opts: { gatewayPort?: number | undefined } = {},
): Promise<{ layout: Layout; fresh: boolean }> {
  const file = join(dir, LAYOUT_FILE);
  if (existsSync(file)) {
    const layout = JSON.parse(readFileSync(file, "utf8")) as Layout;
    if (opts.gatewayPort !== undefined) layout.gateway.port = opts.gatewayPort;
    return { layout, fresh: false };
  }
  // Held open together while picking, so no two picks are the same port.
  const ports = new Set<number>();
  const pick = async (): Promise<number> => {
    for (;;) {
      const p = await freePort();
      if (!ports.has(p)) {
        ports.add(p);
        return p;
      }
    }
  };
  const etcd: EtcdMemberLayout[] = [];
  for (let i = 0; i < ETCD_MEMBERS; i++) {
    etcd.push({ name: `etcd-${i}`, clientPort: await pick(), peerPort: await pick() });
  }
  const apiservers: number[] = [];
  for (let i = 0; i < APISERVERS; i++) apiservers.push(await pick());
  const controllerManagers: number[] = [];
  for (let i = 0; i < CONTROLLER_MANAGERS; i++) controllerManagers.push(await pick());
  const layout: Layout = {
    etcd,
    apiservers,
    controllerManagers,
    gateway: { port: opts.gatewayPort ?? (await pick()), adminPort: await pick() },
    clusterToken: `setpoint-dev-${Date.now().toString(36)}`,
  };
  writeFileSync(file, `${JSON.stringify(layout, null, 2)}\n`);
  return { layout, fresh: true };
}

/** An etcd member's client URL. */
export function etcdClientUrl(m: EtcdMemberLayout): string {
  return `http://127.0.0.1:${m.clientPort}`;
}

/** An apiserver's URL. */
export function apiserverUrl(port: number): string {
  return `https://127.0.0.1:${port}`;
}
