/**
 * The `setpoint` command (main.ts dispatches): `up` runs the control plane (up.ts),
 * `controller-manager` the built-in controllers on their own
 * (controller-manager.ts), `doctor` and `finalizers` inspect a cluster (doctor.ts,
 * finalizers.ts, over inspect/, printed by output.ts); usage-error.ts is the
 * error a command's bad flags raise. It composes every other layer; nothing imports
 * it but bin/setpoint.mjs and the tests.
 */
export { main, USAGE } from "./main.ts";
