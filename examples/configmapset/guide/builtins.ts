/**
 * Setpoint's built-in controllers (garbage collector, namespace lifecycle) for
 * a test environment, which runs the apiserver alone (docs/runtime.md quotes
 * the region below; the example's tests use it).
 */
import { type ControllerManager, createControllerManager } from "../../../src/controllers/index.ts";
import { silentLogger } from "../../../src/runtime/index.ts";
import type { TestEnv } from "../../../src/runtime/testenv.ts";

/** Starts the garbage collector and the namespace controller against `env`; stop() them after. */
export async function startBuiltinControllers(env: TestEnv): Promise<ControllerManager> {
  // #region builtins
  // Dependents are deleted with their owners, and deleted namespaces are emptied,
  // only when the built-in controllers run: start them beside your own.
  const builtins = createControllerManager({
    restConfig: env.config,
    logger: silentLogger(),
    disabled: ["event-ttl"],
  });
  await builtins.start();
  // #endregion
  return builtins;
}
