/**
 * The runtime's client given both addresses of two `setpoint up` apiservers on one
 * etcd (through the kubeconfig's setpoint.dev/servers extension): while writers
 * create and update ConfigMaps and a reflector watches them, the apiserver in use
 * is killed with SIGKILL. Requests go on through the other; every acknowledged write
 * is there afterwards; the watch resumed from its last resourceVersion (no re-list)
 * and saw every acknowledged change once, in order.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import { Client, loadKubeconfig } from "@setpoint/runtime";
import { afterAll, expect, it } from "vitest";
import { stringify } from "yaml";
import { Reflector } from "../../packages/runtime/src/cache/reflector.ts";
import { describeWithEtcd, type EtcdProcess, startEtcd } from "../helpers/etcd.ts";
import { type SetpointProcess, startSetpoint } from "./helpers/setpoint.ts";

const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}
/** Concurrent writers. */
const WRITERS = 4;
/** Acknowledged writes wanted before the kill, and again after it. */
const WRITES_EACH_SIDE = 60;
const NS = "default";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeWithEtcd("clients fail over between apiservers", () => {
  let etcd: EtcdProcess | undefined;
  const servers: SetpointProcess[] = [];
  const dirs: string[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop("SIGKILL");
    await etcd?.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("loses no acknowledged write and the watch goes on when one apiserver is killed", async () => {
    etcd = await startEtcd();
    const prefix = `/failover-${Date.now()}/`;
    const [dirA, dirB] = ["a", "b"].map((n) => mkdtempSync(join(tmpdir(), `setpoint-fo-${n}-`)));
    dirs.push(dirA, dirB);
    const flags = (dir: string) => [
      "--data-dir",
      dir,
      "--storage",
      "etcd",
      "--etcd-endpoints",
      etcd?.clientUrl ?? "",
      "--etcd-prefix",
      prefix,
      "--no-controllers",
    ];
    const a = await startSetpoint(flags(dirA));
    servers.push(a);
    // B shares A's CA, serving certificate and admin token.
    for (const f of ["ca.crt", "apiserver.crt", "apiserver.key", "admin-token"]) {
      copyFileSync(join(dirA, f), join(dirB, f));
    }
    const b = await startSetpoint(flags(dirB));
    servers.push(b);

    // One kubeconfig naming both, A first.
    const kubeconfig = join(dirA, "both.kubeconfig");
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "c",
            cluster: {
              server: a.url,
              "certificate-authority-data": Buffer.from(a.target.ca).toString("base64"),
              extensions: [
                { name: "setpoint.dev/servers", extension: { servers: [a.url, b.url] } },
              ],
            },
          },
        ],
        users: [{ name: "u", user: { token: a.target.token } }],
        contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
        "current-context": "c",
      }),
    );
    const config = loadKubeconfig({ path: kubeconfig });
    expect(config.servers).toEqual([a.url, b.url]);
    const client = new Client({ ...config, timeoutMs: 10_000 });
    const watchClient = new Client(config);

    // The watcher: every event's resourceVersion, per object and overall.
    const seen: { type: string; name: string; rv: number; value: string }[] = [];
    const reflector = new Reflector<KubeObject>(
      watchClient,
      CM,
      {
        replace: () => {},
        apply: (type, obj) =>
          seen.push({
            type,
            name: obj.metadata?.name ?? "",
            rv: Number(obj.metadata?.resourceVersion),
            value: (obj as ConfigMap).data?.n ?? "",
          }),
        bookmark: () => {},
      },
      { namespace: NS, backoffInitialMs: 100, backoffMaxMs: 1_000 },
    );
    const stopWatch = new AbortController();
    const watching = reflector.run(stopWatch.signal);
    while (!reflector.state.watching) await sleep(20);

    // Writers: each creates ConfigMaps and bumps a counter ConfigMap of its own.
    const acked: { name: string; rv: number; value: string }[] = [];
    let failed = 0;
    let running = true;
    const writer = async (w: number) => {
      const counter = `counter-${w}`;
      let current = await client.create<ConfigMap>({
        ...CM,
        metadata: { name: counter, namespace: NS },
        data: { n: "0" },
      });
      acked.push({ name: counter, rv: Number(current.metadata?.resourceVersion), value: "0" });
      for (let i = 0; running; i++) {
        try {
          if (i % 2 === 0) {
            const name = `w${w}-${i}`;
            const made = await client.create<ConfigMap>({
              ...CM,
              metadata: { name, namespace: NS },
              data: { n: String(i) },
            });
            acked.push({ name, rv: Number(made.metadata?.resourceVersion), value: String(i) });
          } else {
            const value = String(i);
            current = await client.update<ConfigMap>({ ...current, data: { n: value } });
            acked.push({ name: counter, rv: Number(current.metadata?.resourceVersion), value });
          }
        } catch {
          failed++;
          // An update whose outcome is unknown: read what is there, and go on from it.
          current = await client.get<ConfigMap>(CM, counter, NS).catch(() => current);
          await sleep(50);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));

    const until = async (what: string, cond: () => boolean, ms = 30_000) => {
      const deadline = Date.now() + ms;
      while (!cond()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await sleep(20);
      }
    };
    await until("writes before the kill", () => acked.length >= WRITES_EACH_SIDE);
    const beforeKill = acked.length;
    const killed = await a.stop("SIGKILL");
    expect(killed.signal).toBe("SIGKILL");
    await until(
      "writes after the kill, through B",
      () => acked.length >= beforeKill + WRITES_EACH_SIDE,
    );
    running = false;
    await Promise.all(writers);

    // Every acknowledged write is in the store (read through B, the one left).
    const last = new Map<string, { rv: number; value: string }>();
    for (const w of acked) {
      const prev = last.get(w.name);
      if (!prev || prev.rv < w.rv) last.set(w.name, w);
    }
    const list = await client.list<ConfigMap>(CM, { namespace: NS });
    const stored = new Map(
      list.items.map((cm) => [
        cm.metadata?.name ?? "",
        { rv: Number(cm.metadata?.resourceVersion), value: cm.data?.n ?? "" },
      ]),
    );
    const lost = [...last].filter(([name, w]) => {
      const s = stored.get(name);
      // A later unacknowledged update may have landed; an older state may not remain.
      return !s || s.rv < w.rv;
    });
    expect(lost).toEqual([]);

    // The watch saw every acknowledged change, each once, in order, without a re-list.
    const maxRv = Math.max(...acked.map((w) => w.rv));
    await until("the watch to catch up", () => seen.some((e) => e.rv >= maxRv));
    stopWatch.abort();
    await watching;
    const rvs = seen.map((e) => e.rv);
    const outOfOrder = rvs.filter((rv, i) => i > 0 && rv <= rvs[i - 1]).length;
    expect(outOfOrder).toBe(0);
    const seenRvs = new Set(rvs);
    const missed = acked.filter((w) => !seenRvs.has(w.rv));
    expect(missed).toEqual([]);
    expect(reflector.state.relists).toBe(0);
    expect(reflector.state.rewatches).toBeGreaterThan(0);
    console.log(
      `failover: ${acked.length} writes acknowledged (${beforeKill} before the kill), ${failed} failed, 0 lost; ${seen.length} watch events, ${outOfOrder} out of order, ${reflector.state.rewatches} rewatches, ${reflector.state.relists} relists`,
    );
    client.close();
    watchClient.close();
  }, 90_000);
});
