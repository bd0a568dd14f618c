/** The `setpoint` command: dispatches to its subcommands. */
import { AGENT_USAGE, agent } from "./agent.ts";
import { controllerManager } from "./controller-manager.ts";
import { CREDENTIALS_USAGE, credentials } from "./credentials.ts";
import { devCluster } from "./dev-cluster/index.ts";
import { doctor } from "./doctor.ts";
import { finalizers } from "./finalizers.ts";
import { gateway } from "./gateway.ts";
import { IMAGE_USAGE, image } from "./image.ts";
import { SERVICE_PROXY_USAGE, serviceProxy } from "./service-proxy.ts";
import { UP_USAGE, up } from "./up.ts";
import { UsageError } from "./usage-error.ts";
import { setpointVersion } from "./version.ts";

export const USAGE = `Usage: setpoint <command> [flags]

Commands:
  up          run the control plane (apiserver on embedded SQLite or etcd)
  finalizers  list objects stuck in deletion; clear a finalizer by hand
  doctor      check the control plane's health at a glance
  controller-manager  run the built-in controllers against an API server
  agent       run a node agent: the Pods bound to its Node as local processes
  image       build and list the images the agent runs Pods from
  credentials write a kubeconfig for a node agent or the gateway, signed by the data dir's CA
  gateway     serve Ingresses as an HTTP(S) reverse proxy that outlives the API server
  service-proxy  serve Services' cluster IPs and node ports from an agent's table (the agent starts it)
  dev-cluster run etcd, apiservers, controller managers, agents and a gateway on this machine

Run 'setpoint <command> --help' for a command's flags; 'setpoint --version' prints the version.
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "up":
        return await up(rest);
      case "finalizers":
        return await finalizers(rest);
      case "doctor":
        return await doctor(rest);
      case "controller-manager":
        return await controllerManager(rest);
      case "agent":
        return await agent(rest);
      case "image":
        return await image(rest);
      case "credentials":
        return await credentials(rest);
      case "gateway":
        return await gateway(rest);
      case "service-proxy":
        return await serviceProxy(rest);
      case "dev-cluster":
        return await devCluster(rest);
      case "--version":
      case "version":
        process.stdout.write(`${setpointVersion()}\n`);
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        process.stdout.write(USAGE);
        return command === undefined ? 2 : 0;
      default:
        process.stderr.write(`setpoint: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      const usage =
        command === "image"
          ? IMAGE_USAGE
          : command === "agent"
            ? AGENT_USAGE
            : command === "credentials"
              ? CREDENTIALS_USAGE
              : command === "service-proxy"
                ? SERVICE_PROXY_USAGE
                : UP_USAGE;
      process.stderr.write(`setpoint ${command}: ${(err as Error).message}\n\n${usage}`);
      return 2;
    }
    throw err;
  }
}
