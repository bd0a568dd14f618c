/** The `setpoint` command: dispatches to its subcommands. */
import { UsageError } from "./usage-error.ts";
import { setpointVersion } from "./version.ts";

/** A subcommand: what runs it, and the usage printed after a flag error. */
interface Command {
  run: (argv: string[]) => Promise<number>;
  usage?: string;
}

/**
 * Each subcommand's module, loaded only when it runs: a process loads the code of
 * its own command and no other (an agent does not hold the apiserver, storage or
 * gateway in memory).
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
  up: async () => {
    const m = await import("./up.ts");
    return { run: m.up, usage: m.UP_USAGE };
  },
  finalizers: async () => ({ run: (await import("./finalizers.ts")).finalizers }),
  doctor: async () => ({ run: (await import("./doctor.ts")).doctor }),
  "controller-manager": async () => ({
    run: (await import("./controller-manager.ts")).controllerManager,
  }),
  agent: async () => {
    const m = await import("./agent.ts");
    return { run: m.agent, usage: m.AGENT_USAGE };
  },
  image: async () => {
    const m = await import("./image.ts");
    return { run: m.image, usage: m.IMAGE_USAGE };
  },
  credentials: async () => {
    const m = await import("./credentials.ts");
    return { run: m.credentials, usage: m.CREDENTIALS_USAGE };
  },
  gateway: async () => ({ run: (await import("./gateway.ts")).gateway }),
  "service-proxy": async () => {
    const m = await import("./service-proxy.ts");
    return { run: m.serviceProxy, usage: m.SERVICE_PROXY_USAGE };
  },
  "log-relay": async () => {
    const m = await import("./log-relay.ts");
    return { run: m.logRelay, usage: m.LOG_RELAY_USAGE };
  },
  "dev-cluster": async () => ({ run: (await import("./dev-cluster/index.ts")).devCluster }),
};

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
  log-relay   write an agent's container logs, each line with its time (the agent starts it)
  dev-cluster run etcd, apiservers, controller managers, agents and a gateway on this machine

Run 'setpoint <command> --help' for a command's flags; 'setpoint --version' prints the version.
`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
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
  }
  const load = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!load) {
    process.stderr.write(`setpoint: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    return 2;
  }
  const cmd = await load();
  try {
    return await cmd.run(rest);
  } catch (err) {
    if (
      err instanceof UsageError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      const usage = cmd.usage ?? (await import("./up.ts")).UP_USAGE;
      process.stderr.write(`setpoint ${command}: ${(err as Error).message}\n\n${usage}`);
      return 2;
    }
    throw err;
  }
}
