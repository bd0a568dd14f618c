/**
 * `setpoint finalizers`: find objects stuck in deletion and, when it is safe,
 * remove a finalizer by hand.
 *
 * - `list` shows every object in deletion (all served kinds, built-in and
 *   custom), how long it has been deleting, and for each finalizer left whether
 *   a live controller declares it (from the controllers' leader Leases).
 * - `clear` removes exactly one finalizer after showing what will happen and
 *   asking for confirmation, with a patch that fails rather than overwrite a
 *   concurrent change, and records a FinalizerCleared Event naming who did it.
 *
 * See docs/runbooks/stuck-finalizers.md.
 */
import { hostname } from "node:os";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import type { KubeObject } from "@setpoint/api";
import { isConflict, isForbidden, isInvalid, isNotFound } from "@setpoint/runtime";
import {
  CLI_COMPONENT,
  clearedMessage,
  clearPatch,
  eventFor,
  FINALIZER_CLEARED_REASON,
  finalizeBody,
  planClear,
} from "./inspect/clear.ts";
import {
  type Connection,
  connect,
  listEverything,
  listLeases,
  servedResources,
} from "./inspect/cluster.ts";
import { formatAge, parseDuration } from "./inspect/duration.ts";
import { describeIdentity, whoAmI } from "./inspect/identity.ts";
import { controllerLeases } from "./inspect/leases.ts";
import { kindLabel, objectLabel, objectRef, resolveResource } from "./inspect/resources.ts";
import {
  attributeFinalizer,
  describeHandling,
  describePlace,
  pendingFinalizers,
  type StuckObject,
  specFinalizers,
  stuckObjects,
} from "./inspect/stuck.ts";
import { note, parseOutputFormat, print, renderJson, renderTable } from "./output.ts";
import { UsageError } from "./usage-error.ts";

export const FINALIZERS_USAGE = `Usage:
  setpoint finalizers list [--older-than DURATION] [-A | -n NAMESPACE] [-o json]
  setpoint finalizers clear KIND/NAME [-n NAMESPACE] --finalizer FINALIZER [--yes]

list: every object stuck in deletion, across every served kind, with the
finalizers it still carries and whether a live controller declares each.
clear: removes one finalizer from one object (after confirmation), and records
a FinalizerCleared Event naming who removed it. KIND is a kind, plural or short
name, optionally with its group (widgets.example.com/my-widget).

Flags:
  --older-than DURATION   list only objects deleting for at least this long (e.g. 10m; default 0)
  -A, --all-namespaces    every namespace and cluster-scoped objects (the default for list)
  -n, --namespace NS      only this namespace (list), or the object's namespace (clear;
                          default: the kubeconfig context's namespace, else "default")
  --finalizer NAME        the finalizer to remove (clear)
  -y, --yes               do not ask for confirmation (clear; required without a terminal)
  -o, --output json       machine-readable output (list)
  --kubeconfig FILE       kubeconfig to use (default $KUBECONFIG, then ~/.kube/config)
  --context NAME          kubeconfig context to use
  -h, --help              this help

See docs/runbooks/stuck-finalizers.md.
`;

/** Exit code when clear is refused for want of confirmation (and for usage errors). */
export const EXIT_REFUSED = 2;

export async function finalizers(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    switch (sub) {
      case "list":
        return await list(rest);
      case "clear":
        return await clear(rest);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        print(FINALIZERS_USAGE);
        return sub === undefined ? EXIT_REFUSED : 0;
      default:
        throw new UsageError(`unknown subcommand ${JSON.stringify(sub)}: use list or clear`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      note(`setpoint finalizers: ${(e as Error).message}\n\n${FINALIZERS_USAGE}`);
      return EXIT_REFUSED;
    }
    note(`setpoint finalizers ${sub}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

const CONNECT_OPTIONS = {
  kubeconfig: { type: "string" },
  context: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

async function list(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...CONNECT_OPTIONS,
      "older-than": { type: "string", default: "0" },
      "all-namespaces": { type: "boolean", short: "A" },
      namespace: { type: "string", short: "n" },
      output: { type: "string", short: "o" },
    },
    strict: true,
  });
  if (values.help) {
    print(FINALIZERS_USAGE);
    return 0;
  }
  if (values["all-namespaces"] && values.namespace) {
    throw new UsageError("-A and -n exclude each other");
  }
  const olderThanMs = parseDuration(values["older-than"], "--older-than");
  const format = parseOutputFormat(values.output);
  const conn = connect(values);
  try {
    const [served, leaseObjects] = await Promise.all([
      servedResources(conn.client),
      listLeases(conn.client),
    ]);
    const listing = await listEverything(conn.client, served.resources, {
      namespace: values.namespace,
      metadataOnly: true,
    });
    listing.failures.unshift(...served.failures);
    const now = Date.now();
    const leases = controllerLeases(leaseObjects, now);
    const stuck = stuckObjects(listing.items, leases, now, olderThanMs);
    for (const f of listing.failures) note(`warning: could not list ${f.resource}: ${f.message}`);
    if (format === "json") {
      print(
        renderJson({
          items: stuck.map((s) => ({
            ...s,
            finalizers: s.finalizers.map((h) => ({ ...h, description: describeHandling(h) })),
          })),
          leases,
          failures: listing.failures,
        }),
      );
      return 0;
    }
    if (stuck.length === 0) {
      print(
        olderThanMs > 0
          ? `No object has been in deletion for ${formatAge(olderThanMs)} or longer.\n`
          : "No object is in deletion.\n",
      );
      return 0;
    }
    print(renderTable(["kind", "namespace/name", "age", "finalizers"], stuck.map(stuckRow)));
    return 0;
  } finally {
    conn.close();
  }
}

function stuckRow(s: StuckObject): string[] {
  return [
    kindLabel(s),
    s.namespace ? `${s.namespace}/${s.name}` : s.name,
    formatAge(s.deletingForMs),
    s.finalizers.length > 0 ? s.finalizers.map(describeHandling).join("\n") : "(none)",
  ];
}

async function clear(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...CONNECT_OPTIONS,
      namespace: { type: "string", short: "n" },
      finalizer: { type: "string" },
      yes: { type: "boolean", short: "y" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    print(FINALIZERS_USAGE);
    return 0;
  }
  const target = parseTarget(positionals);
  const finalizer = values.finalizer;
  if (!finalizer) throw new UsageError("--finalizer is required: name the one finalizer to remove");
  const conn = connect(values);
  try {
    const resource = resolveResource((await servedResources(conn.client)).resources, target.kind);
    const namespace = resource.namespaced
      ? (values.namespace ?? conn.config.namespace ?? "default")
      : undefined;
    const type = { apiVersion: resource.apiVersion, kind: resource.kind };
    const obj = await conn.client.get<KubeObject>(type, target.name, namespace);
    const label = objectLabel(objectRef(resource, obj));
    const plan = planClear(obj, finalizer);
    if (!plan) {
      const left = [...(obj.metadata.finalizers ?? [])];
      note(
        `${label} has no finalizer ${finalizer}; its finalizers: ${left.length > 0 ? left.join(", ") : "(none)"}`,
      );
      return 1;
    }
    const leases = controllerLeases(await listLeases(conn.client), Date.now());
    const handling = attributeFinalizer(finalizer, plan.place, leases);

    print(`Object:      ${label} (uid ${obj.metadata.uid ?? "?"})\n`);
    print(
      `Deletion:    ${
        plan.beingDeleted
          ? `requested ${obj.metadata.deletionTimestamp} (${formatAge(Date.now() - Date.parse(obj.metadata.deletionTimestamp ?? ""))} ago)`
          : "not requested (the object is not being deleted)"
      }\n`,
    );
    print(`Finalizers:  ${[...(obj.metadata.finalizers ?? [])].join(", ") || "(none)"}\n`);
    const spec = specFinalizers(obj);
    if (plan.place === "spec" || spec.length > 0) {
      print(`spec.finalizers: ${spec.join(", ") || "(none)"}\n`);
    }
    print(`Removing:    ${describeHandling(handling)}\n`);
    print(`Afterwards:  ${afterwards(plan)}\n`);
    if (
      handling.state === "handled" ||
      (handling.state === "builtin" && handling.handlers.length > 0)
    ) {
      note(
        `\nWARNING: ${finalizer} is declared by a LIVE controller (${handling.handlers
          .map((h) => `${h.lease}, leader ${h.holder}`)
          .join("; ")}).\n` +
          "It may still be cleaning up. Removing the finalizer skips that cleanup: whatever it\n" +
          "manages outside the API (cloud resources, files, DNS records) is NOT cleaned up.\n" +
          "Prefer finding out why it has not finished (its logs, its Events, setpoint doctor).\n",
      );
    }
    if (!plan.beingDeleted) {
      note(
        "\nNote: the object is not being deleted; its controller will probably add the finalizer again.\n",
      );
    }
    if (!values.yes) {
      if (!process.stdin.isTTY) {
        note(
          "setpoint finalizers clear: refusing to remove a finalizer without confirmation: stdin is not a terminal; pass --yes to confirm",
        );
        return EXIT_REFUSED;
      }
      if (!(await confirm(`Remove finalizer ${finalizer} from ${label}? [y/N] `))) {
        note("Nothing changed.");
        return 1;
      }
    }

    try {
      if (plan.place === "metadata") {
        await conn.client.patch(type, target.name, namespace, clearPatch(obj, plan), {
          type: "json",
          fieldManager: CLI_COMPONENT,
        });
      } else {
        await conn.client.update(finalizeBody(obj, plan), {
          subresource: "finalize",
          fieldManager: CLI_COMPONENT,
        });
      }
    } catch (e) {
      if (isInvalid(e) || isNotFound(e) || isConflict(e)) {
        note(
          `${label} changed since it was read (its finalizers, or the object itself); nothing was removed. Run the command again to see the current state.\n(${e instanceof Error ? e.message : String(e)})`,
        );
        return 1;
      }
      throw e;
    }

    const who = describeIdentity(whoAmI(conn.config));
    await recordCleared(conn, obj, label, clearedMessage(plan, handling, who));
    const gone = await conn.client
      .get<KubeObject>(type, target.name, namespace)
      .then((now) => (now.metadata.uid === obj.metadata.uid ? now : undefined))
      .catch((e: unknown) => {
        if (isNotFound(e)) return undefined;
        throw e;
      });
    if (!gone) print(`Removed ${finalizer}; ${label} is gone.\n`);
    else {
      const left = pendingFinalizers(gone).map(describePlace);
      print(`Removed ${finalizer}; ${label} still has: ${left.join(", ") || "(none)"}.\n`);
    }
    return 0;
  } finally {
    conn.close();
  }
}

/** KIND/NAME, or KIND NAME. */
export function parseTarget(positionals: string[]): { kind: string; name: string } {
  let kind: string | undefined;
  let name: string | undefined;
  if (positionals.length === 1) {
    const slash = positionals[0].indexOf("/");
    if (slash > 0) {
      kind = positionals[0].slice(0, slash);
      name = positionals[0].slice(slash + 1);
    }
  } else if (positionals.length === 2) {
    [kind, name] = positionals;
  }
  if (!kind || !name || name.includes("/")) {
    throw new UsageError(
      `name one object as KIND/NAME (e.g. configmaps/my-config or widgets.example.com/my-widget), got ${JSON.stringify(positionals.join(" "))}`,
    );
  }
  return { kind, name };
}

function afterwards(plan: ReturnType<typeof planClear> & object): string {
  if (plan.deletesObject) {
    return "it is the last finalizer: the object is DELETED from the API at once";
  }
  if (plan.remaining.length > 0) {
    return `the object waits on the remaining finalizers: ${plan.remaining.join(", ")}`;
  }
  return "no finalizers remain; the object stays (it is not being deleted)";
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * Records the FinalizerCleared Event on the object. A namespace being deleted
 * refuses new objects, Events included: then the Event is recorded on the
 * Namespace itself, its message naming the object. A failure is reported, not
 * fatal (the finalizer is gone either way).
 */
async function recordCleared(
  conn: Connection,
  obj: KubeObject,
  label: string,
  message: string,
): Promise<void> {
  const now = new Date();
  try {
    await conn.client.create(eventFor(obj, FINALIZER_CLEARED_REASON, message, hostname(), now), {
      fieldManager: CLI_COMPONENT,
    });
    return;
  } catch (e) {
    const ns = obj.metadata.namespace;
    if (!isForbidden(e) || !ns) return eventFailed(e);
  }
  try {
    const namespace = await conn.client.get<KubeObject>(
      NAMESPACE_TYPE,
      obj.metadata.namespace ?? "",
    );
    const event = eventFor(
      { ...NAMESPACE_TYPE, ...namespace },
      FINALIZER_CLEARED_REASON,
      `${label}: ${message}`,
      hostname(),
      now,
    );
    await conn.client.create(event, { fieldManager: CLI_COMPONENT });
    note(
      `The namespace refuses new Events (it is being deleted): the ${FINALIZER_CLEARED_REASON} Event is recorded on Namespace ${namespace.metadata.name} instead.`,
    );
  } catch (e) {
    eventFailed(e);
  }
}

const NAMESPACE_TYPE = { apiVersion: "v1", kind: "Namespace" } as const;

function eventFailed(e: unknown): void {
  note(
    `warning: the finalizer was removed, but the ${FINALIZER_CLEARED_REASON} Event could not be recorded: ${e instanceof Error ? e.message : String(e)}`,
  );
}
