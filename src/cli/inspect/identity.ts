/**
 * Who is running a command, for the record it leaves (an Event naming who
 * cleared a finalizer): the kubeconfig user of the context in use (as the
 * runtime's loadKubeconfig resolved it), and the local login ($USER). Neither is authenticated by the server; both are what a person
 * reading the Event later needs to find whom to ask.
 */
import { userInfo } from "node:os";
import type { RestConfig } from "@setpoint/runtime";

export interface Identity {
  /** The context's user name in the kubeconfig ("" when unknown, e.g. in a pod). */
  kubeconfigUser: string;
  /** The local login name ("" when unknown). */
  localUser: string;
}

/** The identity of the person (or script) running the command. */
export function whoAmI(
  config: Pick<RestConfig, "user">,
  env: NodeJS.ProcessEnv = process.env,
): Identity {
  let localUser = env.USER ?? env.LOGNAME ?? "";
  if (!localUser) {
    try {
      localUser = userInfo().username;
    } catch {
      localUser = "";
    }
  }
  return { kubeconfigUser: config.user ?? "", localUser };
}

/** "kubeconfig user admin, local user alice" (the parts known). */
export function describeIdentity(id: Identity): string {
  const parts: string[] = [];
  if (id.kubeconfigUser) parts.push(`kubeconfig user ${id.kubeconfigUser}`);
  if (id.localUser) parts.push(`local user ${id.localUser}`);
  return parts.length > 0 ? parts.join(", ") : "an unknown user";
}
