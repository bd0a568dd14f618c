/**
 * Who is running a command, for the record it leaves (an Event naming who
 * cleared a finalizer): the kubeconfig user of the context in use, and the local
 * login ($USER). Neither is authenticated by the server; both are what a person
 * reading the Event later needs to find whom to ask.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { delimiter, join } from "node:path";
import { parse as parseYaml } from "yaml";

export interface Identity {
  /** The context's user name in the kubeconfig ("" when unknown, e.g. in a pod). */
  kubeconfigUser: string;
  /** The local login name ("" when unknown). */
  localUser: string;
}

/** The kubeconfig files searched, in kubectl's order. */
function kubeconfigFiles(path: string | undefined, env: NodeJS.ProcessEnv): string[] {
  if (path) return [path];
  const list = (env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
  if (list.length > 0) return list;
  return [join(env.HOME ?? homedir(), ".kube", "config")];
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : {};
}

/** The user name the current (or given) context names, from the first file that defines it. */
export function kubeconfigUser(
  path: string | undefined,
  context: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const docs: Record<string, unknown>[] = [];
  for (const f of kubeconfigFiles(path, env)) {
    if (!existsSync(f)) continue;
    try {
      docs.push(record(parseYaml(readFileSync(f, "utf8"))));
    } catch {
      // unreadable: loadKubeconfig reports it
    }
  }
  const ctxName =
    context ?? docs.map((d) => d["current-context"]).find((c) => typeof c === "string");
  for (const d of docs) {
    const contexts = Array.isArray(d.contexts) ? d.contexts : [];
    const ctx = contexts.map(record).find((c) => c.name === ctxName);
    if (ctx) {
      const user = record(ctx.context).user;
      return typeof user === "string" ? user : "";
    }
  }
  return "";
}

/** The identity of the person (or script) running the command. */
export function whoAmI(
  path: string | undefined,
  context: string | undefined,
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
  return { kubeconfigUser: kubeconfigUser(path, context, env), localUser };
}

/** "kubeconfig user admin, local user alice" (the parts known). */
export function describeIdentity(id: Identity): string {
  const parts: string[] = [];
  if (id.kubeconfigUser) parts.push(`kubeconfig user ${id.kubeconfigUser}`);
  if (id.localUser) parts.push(`local user ${id.localUser}`);
  return parts.length > 0 ? parts.join(", ") : "an unknown user";
}
