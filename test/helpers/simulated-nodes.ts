/**
 * Simulated nodes for tests (src/agent/simulate/): N Nodes with Lease
 * heartbeats whose Pods become Running and Ready (Succeeded for
 * restartPolicy Never/OnFailure) without processes. Stop them with `stop()`
 * (or pass the start to startForFile).
 */
import type { Client } from "@setpoint/runtime";
import { Simulator, type SimulatorOptions } from "../../src/agent/simulate/index.ts";

export async function startSimulatedNodes(
  client: Client,
  nodes: number,
  opts: Omit<SimulatorOptions, "client" | "nodes"> = {},
): Promise<Simulator> {
  const sim = new Simulator({ client, nodes, ...opts });
  await sim.start();
  return sim;
}
