/**
 * `setpoint doctor`: is my control plane healthy? One pass over the API: the
 * apiserver's health endpoints, each controller's leader Lease, objects behind
 * their spec, objects stuck in deletion, hot loops (writes sampled for a few
 * seconds), and recent Warning Events. Exit code 0 when every check is OK, 1
 * when any warns or fails, 2 on a usage error. See docs/doctor.md.
 */
import { parseArgs } from "node:util";
import type { KubeObject } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { parseTarget } from "./finalizers.ts";
import { apiserverIdentities, etcdEndpointsOf } from "./inspect/apiservers.ts";
import {
  connect,
  listEverything,
  listLeases,
  readsMetadataOnly,
  servedResources,
} from "./inspect/cluster.ts";
import {
  type DoctorFacts,
  type DoctorThresholds,
  diagnose,
  renderReport,
  unreachableReport,
} from "./inspect/diagnose.ts";
import { formatAge, parseDuration } from "./inspect/duration.ts";
import { probeEtcdMembers } from "./inspect/etcd-members.ts";
import {
  DEFAULT_HOT_LOOP_RATE,
  parseReconcileStats,
  RECONCILE_STATS_ANNOTATION,
  reconcileHotKeys,
  sampledForHotLoops,
} from "./inspect/hot-loop.ts";
import { generationLags } from "./inspect/lag.ts";
import { controllerLeases, isControllerLease, leaseInfo } from "./inspect/leases.ts";
import { managedReport, renderManaged } from "./inspect/managed.ts";
import {
  DEFAULT_REPEATED_LIST_RATE,
  parseClientLists,
  type RepeatedList,
  repeatedLists,
} from "./inspect/repeated-lists.ts";
import { objectRef, resolveResource, type ServedResource } from "./inspect/resources.ts";
import { sampleWrites } from "./inspect/sample.ts";
import { stuckObjects } from "./inspect/stuck.ts";
import { DEFAULT_WARNING_WINDOW_MS, recentWarnings } from "./inspect/warnings.ts";
import { note, parseOutputFormat, print, renderJson } from "./output.ts";
import { UsageError } from "./usage-error.ts";

/** Default: objects behind their spec for this long are reported. */
export const DEFAULT_LAG_THRESHOLD = "5m";
/** Default: objects in deletion for this long are reported. */
export const DEFAULT_STUCK_THRESHOLD = "10m";
/** Default length of the write sample for hot loops. */
export const DEFAULT_SAMPLE = "5s";

export const DOCTOR_USAGE = `Usage: setpoint doctor [flags]
       setpoint doctor KIND/NAME [-n NAMESPACE] [-o json]

Is the control plane healthy? Checks the apiserver (/livez, /readyz), every
apiserver's identity Lease, every etcd member's health (and which one leads),
each controller's leader Lease (which controller manager leads), objects whose status.observedGeneration lags their
spec, objects stuck in deletion, hot loops (objects written far more often than
their spec changes), clients listing whole collections again and again (from
the apiserver's /metrics, during the sample), and recent Warning Events. Exit code 0 when healthy, 1 when
problems are found. See docs/doctor.md.

With KIND/NAME: who manages that object? Its controller (the controlling
ownerReference), the controller's field managers and the fields it sets back
when someone else changes them (change those in the controller's object), and
every other field manager with its fields.

Flags:
  --lag-threshold DURATION    report objects behind their spec this long (default ${DEFAULT_LAG_THRESHOLD})
  --stuck-threshold DURATION  report objects in deletion this long (default ${DEFAULT_STUCK_THRESHOLD})
  --sample DURATION           watch writes this long to find hot loops; 0 to skip (default ${DEFAULT_SAMPLE})
  --hot-loop-rate N           excess writes (or reconciles) per second that make a hot loop (default ${DEFAULT_HOT_LOOP_RATE})
  --warnings-since DURATION   window of recent Warning Events (default ${formatAge(DEFAULT_WARNING_WINDOW_MS)})
  -o, --output json           machine-readable report
  -n, --namespace NS          the object's namespace, with KIND/NAME (default: the context's, else "default")
  --etcd-endpoints URL,...    etcd members to check (default: those the apiservers' identity Leases name)
  --kubeconfig FILE           kubeconfig to use (default $KUBECONFIG, then ~/.kube/config)
  --context NAME              kubeconfig context to use
  -h, --help                  this help
`;

/** Resources listed (and watched) whole; the others as metadata only. */
function readWhole(r: ServedResource): boolean {
  if (r.subresources.includes("status")) return true;
  if (r.plural === "events") return true;
  return r.group === "" && r.kind === "Namespace";
}

function isEvent(r: ServedResource): boolean {
  return r.plural === "events" && (r.group === "" || r.group === "events.k8s.io");
}

/** Doctor's options, parsed. */
export interface DoctorOptions {
  thresholds: DoctorThresholds;
  sampleMs: number;
  format: "table" | "json";
  kubeconfig?: string;
  context?: string;
  /** etcd members to check instead of those the identity Leases name. */
  etcdEndpoints?: string[];
  help: boolean;
  /** KIND/NAME given: report who manages that object. */
  target?: { kind: string; name: string };
  namespace?: string;
}

/** Parses doctor's flags; throws UsageError (or a parseArgs error) on a mistake. */
export function parseDoctorArgs(argv: string[]): DoctorOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      namespace: { type: "string", short: "n" },
      "lag-threshold": { type: "string", default: DEFAULT_LAG_THRESHOLD },
      "stuck-threshold": { type: "string", default: DEFAULT_STUCK_THRESHOLD },
      sample: { type: "string", default: DEFAULT_SAMPLE },
      "hot-loop-rate": { type: "string", default: String(DEFAULT_HOT_LOOP_RATE) },
      "warnings-since": { type: "string", default: formatAge(DEFAULT_WARNING_WINDOW_MS) },
      output: { type: "string", short: "o" },
      kubeconfig: { type: "string" },
      context: { type: "string" },
      "etcd-endpoints": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  const rate = Number(values["hot-loop-rate"]);
  if (!(rate > 0)) {
    throw new UsageError(
      `--hot-loop-rate must be a positive number, got ${JSON.stringify(values["hot-loop-rate"])}`,
    );
  }
  return {
    thresholds: {
      lagMs: parseDuration(values["lag-threshold"], "--lag-threshold"),
      stuckMs: parseDuration(values["stuck-threshold"], "--stuck-threshold"),
      hotLoopRate: rate,
      warningWindowMs: parseDuration(values["warnings-since"], "--warnings-since"),
    },
    sampleMs: parseDuration(values.sample, "--sample"),
    format: parseOutputFormat(values.output),
    kubeconfig: values.kubeconfig,
    context: values.context,
    ...(values["etcd-endpoints"] !== undefined
      ? {
          etcdEndpoints: values["etcd-endpoints"]
            .split(",")
            .map((e) => e.trim())
            .filter(Boolean),
        }
      : {}),
    help: values.help === true,
    ...(positionals.length > 0 ? { target: parseTarget(positionals) } : {}),
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
  };
}

/** `setpoint doctor KIND/NAME`: who manages the object (inspect/managed.ts). */
async function doctorObject(
  conn: ReturnType<typeof connect>,
  opts: DoctorOptions & { target: { kind: string; name: string } },
): Promise<number> {
  const resource = resolveResource(
    (await servedResources(conn.client)).resources,
    opts.target.kind,
  );
  const namespace = resource.namespaced
    ? (opts.namespace ?? conn.config.namespace ?? "default")
    : undefined;
  const type = { apiVersion: resource.apiVersion, kind: resource.kind };
  const obj = await conn.client.get<KubeObject>(type, opts.target.name, namespace);
  const report = managedReport(obj, objectRef(resource, obj));
  print(opts.format === "json" ? renderJson(report) : renderManaged(report));
  return 0;
}

/** GET /version; a non-2xx answer throws with its code and message. */
async function readVersion(client: Client): Promise<{ gitVersion?: string }> {
  const r = await client.raw("GET", "/version");
  if (r.status < 200 || r.status >= 300) {
    const message = (r.json as { message?: unknown } | undefined)?.message;
    throw new Error(
      `GET /version: ${r.status}: ${typeof message === "string" ? message : r.text.slice(0, 200)}`,
    );
  }
  return (r.json ?? {}) as { gitVersion?: string };
}

/** The apiserver's whole-collection list counts by client (repeated-lists.ts), when it serves them. */
async function readClientLists(
  client: Client,
): Promise<{ at: number; counts?: Map<string, number>; why?: string }> {
  const at = Date.now();
  try {
    const r = await client.raw("GET", "/metrics", { accept: "text/plain" });
    if (r.status !== 200) return { at, why: `GET /metrics: ${r.status}` };
    const counts = parseClientLists(r.text);
    return counts ? { at, counts } : { at, why: "the apiserver does not count lists by client" };
  } catch (e) {
    return { at, why: `GET /metrics: ${e instanceof Error ? e.message : String(e)}` };
  }
}

export async function doctor(argv: string[]): Promise<number> {
  let opts: DoctorOptions;
  try {
    opts = parseDoctorArgs(argv);
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      note(`setpoint doctor: ${(e as Error).message}\n\n${DOCTOR_USAGE}`);
      return 2;
    }
    throw e;
  }
  if (opts.help) {
    print(DOCTOR_USAGE);
    return 0;
  }
  const { thresholds, sampleMs, format } = opts;

  let conn: ReturnType<typeof connect>;
  try {
    conn = connect(opts);
  } catch (e) {
    note(`setpoint doctor: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  try {
    if (opts.target) {
      try {
        return await doctorObject(conn, { ...opts, target: opts.target });
      } catch (e) {
        note(`setpoint doctor: ${e instanceof Error ? e.message : String(e)}`);
        return e instanceof UsageError ? 2 : 1;
      }
    }
    const started = Date.now();
    let version: { gitVersion?: string };
    try {
      version = await readVersion(conn.client);
    } catch (e) {
      const report = unreachableReport(
        conn.config.server,
        e instanceof Error ? e.message : String(e),
        thresholds,
        new Date(),
      );
      print(format === "json" ? renderJson(report) : renderReport(report));
      return 1;
    }
    const latencyMs = Date.now() - started;
    const [livez, readyz] = await Promise.all([
      conn.client.raw("GET", "/livez", { accept: "text/plain" }),
      conn.client.raw("GET", "/readyz?verbose", { accept: "text/plain" }),
    ]);
    const server = {
      url: conn.config.server,
      version: version.gitVersion ?? "",
      livez: { code: livez.status, body: livez.text },
      readyz: { code: readyz.status, body: readyz.text },
      latencyMs,
    };

    const [served, leaseObjects] = await Promise.all([
      servedResources(conn.client),
      listLeases(conn.client),
    ]);
    const listing = await listEverything(conn.client, served.resources, {
      metadataOnly: (r) => !readWhole(r),
    });

    const listsBefore = sampleMs > 0 ? await readClientLists(conn.client) : undefined;
    if (sampleMs > 0 && format === "table") note(`Sampling writes for ${formatAge(sampleMs)}...`);
    const sample =
      sampleMs > 0
        ? await sampleWrites(
            conn.client,
            listing,
            sampledForHotLoops,
            (r) => readsMetadataOnly(r, (x) => !readWhole(x)),
            sampleMs,
          )
        : undefined;

    const listsAfter = listsBefore ? await readClientLists(conn.client) : undefined;
    let repeated: RepeatedList[] | undefined;
    let repeatedSkipped = "write sampling off";
    if (listsBefore && listsAfter) {
      if (listsBefore.counts && listsAfter.counts) {
        repeated = repeatedLists(
          listsBefore.counts,
          listsAfter.counts,
          listsAfter.at - listsBefore.at,
          DEFAULT_REPEATED_LIST_RATE,
        );
      } else {
        repeatedSkipped = listsAfter.why ?? listsBefore.why ?? "no list metrics";
      }
    }
    const now = Date.now();
    const apiservers = apiserverIdentities(leaseObjects, now);
    const etcdEndpoints = opts.etcdEndpoints ?? etcdEndpointsOf(apiservers);
    const etcd = etcdEndpoints.length > 0 ? await probeEtcdMembers(etcdEndpoints) : undefined;
    const leases = controllerLeases(leaseObjects, now);
    const stats = leaseObjects.filter(isControllerLease).map((l) => ({
      info: leaseInfo(l, now),
      stats: parseReconcileStats(l.metadata.annotations?.[RECONCILE_STATS_ANNOTATION]),
    }));
    const facts: DoctorFacts = {
      server,
      apiservers,
      ...(etcd ? { etcd } : {}),
      leases,
      deleting: stuckObjects(listing.items, leases, now, 0),
      lags: generationLags(listing.items, now, thresholds.lagMs),
      hotLoops: sample ? sample.sampler.hotLoops(sample.windowMs, thresholds.hotLoopRate) : [],
      hotKeys: reconcileHotKeys(stats, thresholds.hotLoopRate),
      sampledMs: sample?.windowMs ?? 0,
      warnings: recentWarnings(
        listing.items.filter((i) => isEvent(i.resource)).map((i) => i.obj),
        leases,
        now,
        thresholds.warningWindowMs,
      ),
      unreadable: [...served.failures, ...listing.failures, ...(sample?.failures ?? [])],
      ...(repeated ? { repeatedLists: repeated } : { repeatedListsSkipped: repeatedSkipped }),
    };
    const report = diagnose(facts, thresholds, new Date(now));
    print(format === "json" ? renderJson(report) : renderReport(report));
    return report.healthy ? 0 : 1;
  } catch (e) {
    note(`setpoint doctor: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  } finally {
    conn.close();
  }
}
