/**
 * A controller under faults converges, and every write it commits moves an
 * object toward the desired state (none is redundant).
 *
 * The controller mirrors each labelled ConfigMap into an owned Secret and
 * stamps a hash of the data on the ConfigMap. It talks to the apiserver through
 * a proxy that answers 500s and 409s at random, lies about committed writes,
 * and cuts watches; it is restarted mid-run; meanwhile a user keeps changing the
 * ConfigMaps and deleting Secrets. Every committed write is counted at the proxy.
 */
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { deepClone } from "../../packages/api/src/deep-copy.ts";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { isNotFound, retryOnConflict } from "../../packages/runtime/src/client/errors.ts";
import { kind } from "../../packages/runtime/src/client/kind.ts";
import { matching } from "../../packages/runtime/src/controller/predicates.ts";
import { ExponentialBackoffRateLimiter } from "../../packages/runtime/src/controller/rate-limiter.ts";
import type { Reconciler } from "../../packages/runtime/src/controller/reconciler.ts";
import { createOrUpdate } from "../../packages/runtime/src/helpers/create-or-update.ts";
import { setControllerReference } from "../../packages/runtime/src/helpers/owner-references.ts";
import { silentLogger } from "../../packages/runtime/src/log.ts";
import { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";
import { startFaultProxy } from "./faults/proxy.ts";

type ConfigMap = KubeObject & { data?: Record<string, string> };
type Secret = KubeObject & { data?: Record<string, string> };
const CM = kind<ConfigMap>("v1", "ConfigMap");
const SECRET = kind<Secret>("v1", "Secret");
const HASH = "mirror.example.com/hash";
const OBJECTS = 20;
const MUTATIONS = 40;
const DRIFTS = 8;
/** The User-Agent of the controller's client: the proxy injects faults into its requests only. */
const SUBJECT_AGENT = "mirror-under-faults";

const env = startForFile(startTestServer);
let user: Client;

beforeAll(() => {
  user = env.newClient();
});

const hashOf = (data: Record<string, string> | undefined) =>
  createHash("sha256")
    .update(JSON.stringify(Object.entries(data ?? {}).sort()))
    .digest("hex")
    .slice(0, 16);
const b64 = (data: Record<string, string> | undefined) =>
  Object.fromEntries(
    Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
  );

const mirror: Reconciler = async (req, ctx) => {
  let src: ConfigMap;
  try {
    src = await ctx.reader.get<ConfigMap>(CM, req.name, req.namespace);
  } catch (e) {
    if (isNotFound(e)) return;
    throw e;
  }
  await createOrUpdate(
    ctx.client,
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `${req.name}-mirror`, namespace: req.namespace },
    } as Secret,
    (s) => {
      s.data = b64(src.data);
      setControllerReference(src, s);
    },
    { reader: ctx.reader },
  );
  const hash = hashOf(src.data);
  if (src.metadata.annotations?.[HASH] !== hash) {
    const next = deepClone(src);
    next.metadata.annotations = { ...next.metadata.annotations, [HASH]: hash };
    await ctx.client.update(next);
  }
};

function startManager(url: string, ns: string): Manager {
  const mgr = new Manager({
    client: new Client({ server: url, userAgent: SUBJECT_AGENT, timeoutMs: 2_000 }),
    logger: silentLogger(),
    // Watches are cut every few hundred ms here: keep the reflector's backoff short.
    cache: { informerOptions: { backoffInitialMs: 20, backoffMaxMs: 300 } },
  });
  mgr
    .controller("mirror")
    .for(CM, {
      predicates: [
        matching((o) => o.metadata.namespace === ns && o.metadata.labels?.mirror === "yes"),
      ],
    })
    .owns(SECRET)
    .withOptions({
      rateLimiter: new ExponentialBackoffRateLimiter({ baseDelayMs: 5, maxDelayMs: 200 }),
      readYourWritesTimeoutMs: 1_000,
    })
    .complete(mirror);
  return mgr;
}

async function converged(ns: string): Promise<boolean> {
  const cms = (await user.list<ConfigMap>(CM, { namespace: ns })).items;
  const secrets = new Map(
    (await user.list<Secret>(SECRET, { namespace: ns })).items.map((s) => [s.metadata.name, s]),
  );
  if (cms.length !== OBJECTS) return false;
  for (const cm of cms) {
    const s = secrets.get(`${cm.metadata.name}-mirror`);
    if (!s || JSON.stringify(s.data ?? {}) !== JSON.stringify(b64(cm.data))) return false;
    if (s.metadata.ownerReferences?.[0]?.uid !== cm.metadata.uid) return false;
    if (cm.metadata.annotations?.[HASH] !== hashOf(cm.data)) return false;
  }
  return true;
}

describe("controller under faults", () => {
  it("converges through 500s, 409s, lost write answers, cut watches and a restart, writing nothing twice", async () => {
    const seed = Number(process.env.FAULT_SEED ?? Date.now() % 100_000);
    const ns = `faults-${seed}`;
    await user.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    const proxy = await startFaultProxy(env.url, SUBJECT_AGENT, {
      seed,
      error500: 0.1,
      conflict409: 0.1,
      lostAnswer: 0.1,
      cutWatchEveryMs: 100,
    });
    let rnd = seed || 1;
    const random = (n: number) => {
      rnd = (Math.imul(rnd, 1664525) + 1013904223) >>> 0;
      return rnd % n;
    };
    const changes = { created: OBJECTS, dataChanges: 0, drifts: 0 };
    let mgr = startManager(proxy.url, ns);
    try {
      for (let i = 0; i < OBJECTS; i++) {
        await user.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `cm-${i}`, namespace: ns, labels: { mirror: "yes" } },
          data: { v: "0" },
        });
      }
      await mgr.start();
      for (let i = 0; i < MUTATIONS; i++) {
        const name = `cm-${random(OBJECTS)}`;
        await retryOnConflict(async () => {
          const cur = await user.get<ConfigMap>(CM, name, ns);
          await user.update({ ...cur, data: { v: String(i + 1) } });
        });
        changes.dataChanges++;
        if (i % Math.floor(MUTATIONS / DRIFTS) === 0) {
          try {
            await user.delete(SECRET, `cm-${random(OBJECTS)}-mirror`, ns);
            changes.drifts++;
          } catch (e) {
            if (!isNotFound(e)) throw e;
          }
        }
        if (i === MUTATIONS / 2) {
          // Restart the controller mid-run; changes keep coming while it is down.
          await mgr.stop();
          mgr = startManager(proxy.url, ns);
          await mgr.start();
        }
        await sleep(random(15));
      }
      try {
        await eventually(() => converged(ns), `convergence (seed ${seed})`, 20_000);
      } catch (e) {
        const q = mgr.controllers[0].queue;
        const state = {
          queue: q.size,
          ready: q.len(),
          inFlight: q.inFlight,
          informers: mgr.cache.health(),
        };
        throw new Error(`${String(e)}; state: ${JSON.stringify(state)}`);
      }
      // Quiet once converged: no further writes even as watches keep being cut.
      const committed = () => proxy.writes.filter((w) => w.subject);
      const total = () => committed().length;
      const atConvergence = total();
      await sleep(500);
      expect(total(), `seed ${seed}`).toBe(atConvergence);
      // Every committed write moved an object toward its desired state: a Secret
      // create, a Secret update or a hash stamp per change, nothing more.
      const bound = 2 * (changes.created + changes.dataChanges) + changes.drifts;
      expect(
        atConvergence,
        `seed ${seed}: ${JSON.stringify(committed().map((w) => `${w.method} ${w.path}`))}`,
      ).toBeLessThanOrEqual(bound);
      expect(
        proxy.injected.error500 + proxy.injected.conflict409 + proxy.injected.lostAnswer,
      ).toBeGreaterThan(0);
      expect(proxy.injected.cutWatch).toBeGreaterThan(0);
    } finally {
      await mgr.stop();
      await proxy.close();
    }
  });
});
