/** What startTestEnv (testenv.ts) takes and returns, shared with its child-process mode (child-process.ts). */
import type { KubeObject } from "@setpoint/api";
import type { Client, RestConfig } from "@setpoint/runtime";

export interface TestEnvOptions {
  /** "memory" (default): nothing on disk; "file": a SQLite file in a temp dir. */
  storage?: "memory" | "file";
  /** Kubernetes minor version the server reports (27..33). */
  kubernetesMinor?: number;
  /** CustomResourceDefinitions to install before returning (waits until they are served). */
  crds?: KubeObject[];
  /**
   * Built-in controllers to run beside the apiserver: `true` (default) for the
   * garbage collector and the namespace controller, `false` for none (the
   * apiserver alone), or a list of names ("garbage-collector", "namespace",
   * "event-ttl", "serviceaccount").
   */
  controllers?: boolean | readonly string[];
  /**
   * Where the control plane runs: "self" (default), in this process, on its event
   * loop; "child", in a child process of its own, for tests that block this
   * process's event loop while the server must answer (`execFileSync("kubectl",
   * ...)`, spawnSync, synchronous HTTP): in process those hang. A child takes
   * longer to start (a second or more).
   */
  process?: "self" | "child";
}

export interface TestEnv {
  /** Base URL of the apiserver (plain http, no authentication). */
  readonly url: string;
  /** A config that reaches the server, for `new Client(config)` or a Manager. */
  readonly config: RestConfig;
  /** A client of the server, closed by stop(). */
  readonly client: Client;
  /** Path of a kubeconfig file for the server (for kubectl or other tools). */
  readonly kubeconfigPath: string;
  /** Stops the controllers and the server and removes temporary files. */
  stop(): Promise<void>;
}
