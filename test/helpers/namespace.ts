/** Namespaces for tests that share one server: each test makes its own. */
import type { Client } from "@setpoint/runtime";

let seq = 0;

/** Creates a namespace no other test (in this or another test process) uses, and returns its name. */
export async function freshNamespace(client: Client, prefix = "t"): Promise<string> {
  const name = `${prefix}-${process.pid}-${++seq}`;
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  return name;
}
