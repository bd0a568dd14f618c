/**
 * The ConfigMapSet example under faults: it still converges, every write it
 * commits changes something, and once converged it writes nothing at all.
 *
 * The controller talks to a real apiserver (startTestEnv) through a proxy that,
 * from a fixed seed, answers 500s and 409s, loses the answers of committed
 * writes, cuts watches, loses watch events in transit and expires watch resumes
 * (410, forcing a re-list). Meanwhile a user relabels namespaces, edits
 * templates, tampers with managed ConfigMaps, deletes and recreates sets (the
 * garbage collector removes the old ConfigMaps) and creates namespaces, and the
 * controller is killed (no drain) and restarted mid-run, missing the changes
 * made while it was down. Every committed write goes through the proxy and is
 * recorded with the object's content afterwards.
 */
import { afterAll, describe, expect, it } from "vitest";
import { SET_LABEL } from "../../examples/configmapset/configmap.ts";
import { addConfigMapSetController } from "../../examples/configmapset/controller.ts";
import {
  type ConfigMap,
  ConfigMapKind,
  type ConfigMapSet,
  ConfigMapSetKind,
  configMapSet,
  configMapSetCrd,
  type Namespace,
  NamespaceKind,
} from "../../examples/configmapset/types.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { isNotFound, retryOnConflict } from "../../packages/runtime/src/client/errors.ts";
import { ExponentialBackoffRateLimiter } from "../../packages/runtime/src/controller/rate-limiter.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { createControllerManager } from "../../src/controllers/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { sleep } from "../helpers/poll.ts";
import { divergence } from "./faults/divergence.ts";
import {
  type FaultCounts,
  type FaultProxy,
  noFaults,
  seededRandom,
  startFaultProxy,
} from "./faults/proxy.ts";
import { auditWrites } from "./faults/writes.ts";

/** Seeds of the runs (each run is one test). */
const SEEDS = [11, 23, 37];
/** The User-Agent of the controller's client: the proxy injects faults into its requests only. */
const SUBJECT_AGENT = "configmapset-under-faults";
const NAMESPACES = 10;
const OPERATIONS = 60;
/** Operations made while the controller is down. */
const OPERATIONS_WHILE_DOWN = 6;
const CONVERGE_TIMEOUT_MS = 20_000;
/** How long the converged system is watched for writes (several resync periods). */
const QUIET_WINDOW_MS = 1_200;
const RESYNC_MS = 250;

const PLAN = {
  error500: 0.08,
  conflict409: 0.08,
  lostAnswer: 0.08,
  expireResume: 0.25,
  loseEvent: 0.05,
  cutWatchEveryMs: 150,
};

const TEAMS = ["red", "blue", "green"];
const totals = noFaults();

function startController(url: string): { mgr: Manager; client: Client } {
  const client = new Client({ server: url, userAgent: SUBJECT_AGENT, timeoutMs: 2_000 });
  const mgr = new Manager({
    client,
    logger: silentLogger(),
    // A restart here is a crash: reconciles in flight are cut off, not drained.
    gracefulShutdownTimeoutMs: 0,
    cache: {
      resyncMs: RESYNC_MS,
      // Watches are cut every few hundred ms: keep the reflector's backoff short.
      informerOptions: { backoffInitialMs: 20, backoffMaxMs: 300 },
    },
  });
  addConfigMapSetController(mgr, {
    rateLimiter: new ExponentialBackoffRateLimiter({ baseDelayMs: 5, maxDelayMs: 300 }),
    readYourWritesTimeoutMs: 1_000,
  });
  return { mgr, client };
}

async function reconcileCount(mgr: Manager): Promise<number> {
  const text = await mgr.metrics.text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("controller_runtime_reconcile_total{"))
    .reduce((n, l) => n + Number(l.split(" ").pop()), 0);
}

/** The user's side of the run: random but seeded changes, through the proxy (never faulted). */
class User {
  private readonly random: () => number;
  private nsCount = 0;
  readonly namespaces: string[] = [];
  readonly sets = ["by-team", "prod-only", "not-red", "everywhere"];

  constructor(
    private readonly client: Client,
    seed: number,
  ) {
    this.random = seededRandom(seed * 7_919 + 1);
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.random() * xs.length)];
  }

  labels(): Record<string, string> {
    const l: Record<string, string> = { team: this.pick(TEAMS) };
    if (this.random() < 0.5) l.env = "prod";
    return l;
  }

  async createNamespace(): Promise<void> {
    const name = `ns-${this.nsCount++}`;
    await this.client.create<Namespace>({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels: this.labels() },
    });
    this.namespaces.push(name);
  }

  specs(): ConfigMapSet["spec"][] {
    return [
      { namespaceSelector: { matchLabels: { team: "blue" } }, template: { data: { v: "0" } } },
      {
        namespaceSelector: { matchExpressions: [{ key: "env", operator: "In", values: ["prod"] }] },
        template: { data: { v: "0" }, labels: { tier: "prod" } },
      },
      {
        namespaceSelector: {
          matchExpressions: [{ key: "team", operator: "NotIn", values: ["red"] }],
        },
        template: { data: { v: "0" } },
      },
      { namespaceSelector: {}, template: { data: { everywhere: "yes" } } },
    ];
  }

  async createSets(): Promise<void> {
    const specs = this.specs();
    for (let i = 0; i < this.sets.length; i++) {
      await this.client.create(configMapSet(this.sets[i], specs[i]));
    }
  }

  /** One random change. */
  async step(i: number): Promise<void> {
    const r = this.random();
    if (r < 0.35) {
      const ns = this.pick(this.namespaces);
      await retryOnConflict(async () => {
        const cur = await this.client.get<Namespace>(NamespaceKind, ns);
        cur.metadata.labels = this.labels();
        await this.client.update(cur);
      });
    } else if (r < 0.6) {
      const name = this.pick(this.sets);
      const withLabel = this.random() < 0.5;
      await retryOnConflict(async () => {
        const cur = await this.client.get<ConfigMapSet>(ConfigMapSetKind, name);
        cur.spec.template = {
          data: { v: String(i), ...(this.random() < 0.3 ? { extra: "x" } : {}) },
          ...(withLabel ? { labels: { rev: String(i % 3) } } : {}),
        };
        await this.client.update(cur);
      });
    } else if (r < 0.88) {
      await this.tamper();
    } else if (r < 0.94) {
      await this.recreateSet(i);
    } else {
      await this.createNamespace();
    }
  }

  /** Deletes a set and creates it again (a new UID): its old ConfigMaps are garbage. */
  private async recreateSet(i: number): Promise<void> {
    const index = Math.floor(this.random() * this.sets.length);
    const name = this.sets[index];
    await this.client.delete(ConfigMapSetKind, name);
    const spec = this.specs()[index];
    spec.template = { ...spec.template, data: { v: String(i) } };
    await this.client.create(configMapSet(name, spec));
  }

  /** Changes a managed ConfigMap by hand, if there is one where we look. */
  private async tamper(): Promise<void> {
    const ns = this.pick(this.namespaces);
    const name = this.pick(this.sets);
    const how = this.random();
    try {
      if (how < 0.3) {
        await this.client.delete(ConfigMapKind, name, ns);
        return;
      }
      await retryOnConflict(async () => {
        const cm = await this.client.get<ConfigMap>(ConfigMapKind, name, ns);
        if (how < 0.6) cm.data = { tampered: "yes" };
        else if (how < 0.75) cm.metadata.ownerReferences = [];
        else if (how < 0.9) cm.metadata.labels = { [SET_LABEL]: name, mine: "yes" };
        else cm.metadata.labels = { ...cm.metadata.labels, "added-by-hand": "yes" };
        await this.client.update(cm);
      });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

describe("ConfigMapSet under faults", () => {
  afterAll(() => {
    // Across the seeds, every kind of fault was injected at least once.
    for (const [k, n] of Object.entries(totals)) expect(n, k).toBeGreaterThan(0);
  });

  it.each(SEEDS)(
    "seed %i: converges, writes nothing twice, and is quiet once converged",
    async (seed) => {
      const env = await startTestEnv({ crds: [configMapSetCrd()], controllers: false }); // built-ins started below
      const proxy: FaultProxy = await startFaultProxy(env.url, SUBJECT_AGENT, { seed, ...PLAN });
      const userClient = new Client({ server: proxy.url, userAgent: "faults-user" });
      const user = new User(userClient, seed);
      // The garbage collector deletes the ConfigMaps of deleted sets (not faulted).
      const builtins = createControllerManager({
        restConfig: { server: proxy.url, userAgent: "builtin-controllers" },
        logger: silentLogger(),
        disabled: ["namespace", "event-ttl"],
        gc: { discoveryIntervalMs: 1_000 },
      });
      await builtins.start();
      let running = startController(proxy.url);
      try {
        for (let i = 0; i < NAMESPACES; i++) await user.createNamespace();
        await user.createSets();
        await running.mgr.start();

        for (let i = 0; i < OPERATIONS; i++) {
          await user.step(i);
          if (i === OPERATIONS / 2) {
            await running.mgr.stop();
            running.client.close();
            for (let j = 0; j < OPERATIONS_WHILE_DOWN; j++) await user.step(OPERATIONS + j);
            running = startController(proxy.url);
            await running.mgr.start();
          }
          await sleep(Math.floor(user.pick([0, 5, 10, 20, 40])));
        }

        const deadline = Date.now() + CONVERGE_TIMEOUT_MS;
        let diff = await divergence(env.client);
        while (diff && Date.now() < deadline) {
          await sleep(50);
          diff = await divergence(env.client);
        }
        expect(
          diff,
          `seed ${seed}: not converged; faults ${JSON.stringify(proxy.injected)}; informers ${JSON.stringify(running.mgr.cache.health())}`,
        ).toBeUndefined();

        // Quiet: with resyncs reconciling every set again and faults still
        // being injected into watches, nothing more is written.
        await sleep(RESYNC_MS);
        const mark = proxy.writes.length;
        const reconcilesBefore = await reconcileCount(running.mgr);
        await sleep(QUIET_WINDOW_MS);
        const late = proxy.writes.slice(mark).filter((w) => w.subject);
        expect(late.map((w) => `${w.method} ${w.path}`)).toEqual([]);
        expect(await reconcileCount(running.mgr)).toBeGreaterThan(reconcilesBefore);

        // Idempotent: no committed write left its object as it already was,
        // beyond writes whose answer was lost (a retry may repeat those).
        const audit = auditWrites(proxy.writes, ["configmaps", "configmapsets"]);
        for (const [uid, redundant] of audit.redundant) {
          expect(
            redundant.length,
            `seed ${seed}: redundant writes to ${uid}: ${redundant.map((r) => `${r.write.method} ${r.write.path}`).join(", ")}`,
          ).toBeLessThanOrEqual(audit.answerLost.get(uid) ?? 0);
        }
        const subjectWrites = proxy.writes.filter((w) => w.subject).length;
        expect(subjectWrites).toBeGreaterThan(0);
        expect(proxy.injected.error500 + proxy.injected.conflict409).toBeGreaterThan(0);
        expect(
          proxy.injected.cutWatch + proxy.injected.loseEvent + proxy.injected.expireResume,
        ).toBeGreaterThan(0);
      } finally {
        for (const [k, n] of Object.entries(proxy.injected)) totals[k as keyof FaultCounts] += n;
        await running.mgr.stop();
        running.client.close();
        userClient.close();
        await builtins.stop();
        await proxy.close();
        await env.stop();
      }
    },
    60_000,
  );
});
