/**
 * `setpoint credentials`: a kubeconfig for a node agent, a gateway, a controller
 * manager or a scheduler run on its own, holding a client certificate signed by
 * the data dir's CA (ca.crt, ca.key, as `setpoint up` made them): `--node NAME`
 * for `system:node:NAME` in `system:nodes` (what Node authorization and
 * NodeRestriction admit), `--gateway` for `system:setpoint:gateway`,
 * `--controller-manager` for `system:kube-controller-manager`, `--scheduler` for
 * `system:kube-scheduler`, each bound to its bootstrap role. The server is the data dir's kubeconfig's unless
 * --server says. Written 0600 to --output (default stdout).
 */
import { readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parse } from "yaml";
import {
  CONTROLLER_MANAGER_IDENTITY,
  type ComponentIdentity,
  GATEWAY_IDENTITY,
  KUBECONFIG_FILE,
  nodeIdentity,
  SCHEDULER_IDENTITY,
  writeComponentKubeconfig,
} from "../controlplane/index.ts";
import { UsageError } from "./usage-error.ts";

export const CREDENTIALS_USAGE = `Usage: setpoint credentials (--node NAME | --gateway | --controller-manager | --scheduler) [flags]

Writes a kubeconfig whose client certificate, signed by the data dir's CA,
names a node agent (--node NAME: user system:node:NAME, group system:nodes),
the gateway (--gateway: user system:setpoint:gateway), the controller manager
(--controller-manager: user system:kube-controller-manager) or the scheduler
(--scheduler: user system:kube-scheduler), for 'setpoint agent --kubeconfig',
'setpoint gateway --kubeconfig' and 'setpoint controller-manager --kubeconfig
--use-service-account-credentials --scheduler-kubeconfig' run on their own.

Flags:
  --data-dir DIR   the control plane's data dir, holding ca.crt and ca.key (default ./.setpoint)
  --node NAME      credentials of the node NAME
  --gateway        credentials of the gateway
  --controller-manager  credentials of the controller manager
  --scheduler      credentials of the scheduler
  --server URL     the apiserver's URL (default: the data dir's kubeconfig's)
  -o, --output F   write to F (0600) instead of stdout
`;

export async function credentials(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      "data-dir": { type: "string", default: ".setpoint" },
      node: { type: "string" },
      gateway: { type: "boolean", default: false },
      "controller-manager": { type: "boolean", default: false },
      scheduler: { type: "boolean", default: false },
      server: { type: "string" },
      output: { type: "string", short: "o" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(CREDENTIALS_USAGE);
    return 0;
  }
  const chosen = [
    values.node !== undefined,
    values.gateway,
    values["controller-manager"],
    values.scheduler,
  ].filter(Boolean).length;
  if (chosen !== 1) {
    throw new UsageError("give one of --node NAME, --gateway, --controller-manager or --scheduler");
  }
  let who: ComponentIdentity;
  if (values.node !== undefined) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(values.node)) {
      throw new UsageError(`--node: ${JSON.stringify(values.node)} is not a valid Node name`);
    }
    who = nodeIdentity(values.node);
  } else if (values.gateway) {
    who = GATEWAY_IDENTITY;
  } else if (values["controller-manager"]) {
    who = CONTROLLER_MANAGER_IDENTITY;
  } else {
    who = SCHEDULER_IDENTITY;
  }
  const dir = resolve(values["data-dir"]);
  let server = values.server;
  if (server === undefined) {
    try {
      const doc = parse(readFileSync(join(dir, KUBECONFIG_FILE), "utf8")) as {
        clusters?: { cluster?: { server?: string } }[];
      };
      server = doc.clusters?.[0]?.cluster?.server;
    } catch {}
    if (!server) throw new UsageError(`no --server, and ${join(dir, KUBECONFIG_FILE)} names none`);
  }
  try {
    if (values.output !== undefined) {
      await writeComponentKubeconfig(resolve(values.output), dir, server, who);
      return 0;
    }
    const tmp = await mkdtemp(join(tmpdir(), "setpoint-credentials-"));
    try {
      const path = join(tmp, "kubeconfig");
      await writeComponentKubeconfig(path, dir, server, who);
      process.stdout.write(await readFile(path, "utf8"));
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
    return 0;
  } catch (err) {
    process.stderr.write(`setpoint credentials: ${(err as Error).message}\n`);
    return 1;
  }
}
