/**
 * `setpoint doctor` as a user runs it, against a real apiserver: healthy (exit
 * 0) on a quiet cluster with a well-behaved controller; with planted problems
 * (a controller that rewrites status on every pass, a controller that requeues
 * one key at once and writes nothing, found through the per-key reconcile
 * counts its manager publishes, an object whose observedGeneration lags, a
 * controller failing with a TerminalError, a leader Lease nobody renews, an
 * object stuck on an abandoned finalizer, per-key reconcile counts published on
 * a Lease) each found and exit 1; and an unreachable apiserver reported as such.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject } from "@setpoint/api";
import { RECONCILE_STATS_ANNOTATION } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { matching } from "../../packages/runtime/src/controller/predicates.ts";
import { TerminalError } from "../../packages/runtime/src/controller/reconciler.ts";
import { updateStatusIfChanged } from "../../packages/runtime/src/helpers/status.ts";
import { microTime } from "../../packages/runtime/src/manager/leader-election.ts";
import type { Manager } from "../../packages/runtime/src/manager/manager.ts";
import type { DoctorReport } from "../../src/cli/inspect/index.ts";
import { eventually, sleep } from "../helpers/poll.ts";
import { startForFile } from "../helpers/test-server.ts";
import { electedManager, runCli, startWidgetEnv, WIDGET, widget } from "./helpers.ts";

/** Doctor samples writes for seconds; several runs on a loaded machine. */
const TEST_TIMEOUT_MS = 90_000;

type Widget = KubeObject & { spec?: { size?: number }; status?: Record<string, unknown> };
const CONFIGMAP = { apiVersion: "v1", kind: "ConfigMap" } as const;

function check(report: DoctorReport, name: string) {
  const c = report.checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check ${name}`);
  return c;
}

describe("setpoint doctor on a quiet cluster", () => {
  const env = startForFile(startWidgetEnv);
  let mgr: Manager;

  beforeAll(async () => {
    mgr = electedManager(env.client, "calm-pod", "calm-controller");
    // Stamps observedGeneration, writing status only when it changes.
    mgr
      .controller("calm")
      .for(WIDGET)
      .complete(async (req, ctx) => {
        const w = await ctx.reader.get<Widget>(WIDGET, req.name, req.namespace);
        await updateStatusIfChanged(ctx.client, w, {
          observedGeneration: w.metadata.generation,
          size: w.spec?.size,
        });
      });
    await mgr.start();
    await mgr.elected();
  }, 60_000);

  afterAll(async () => {
    await mgr?.stop();
  });

  it(
    "reports every check OK and exits 0",
    async () => {
      await env.client.create(widget("w", "default", { spec: { size: 1 } }));
      await env.client.patch(WIDGET, "w", "default", { spec: { size: 2 } }, { type: "merge" });
      await eventually(async () => {
        const w = await env.client.get<Widget>(WIDGET, "w", "default");
        return w.status?.observedGeneration === 2;
      });
      const j = await runCli(["doctor", "-o", "json", "--sample", "1s", "--lag-threshold", "0"], {
        kubeconfig: env.kubeconfigPath,
      });
      expect(j.code, j.stdout + j.stderr).toBe(0);
      const report = JSON.parse(j.stdout) as DoctorReport;
      expect(report.healthy).toBe(true);
      expect(report.checks.map((c) => [c.name, c.verdict])).toEqual([
        ["apiserver", "OK"],
        ["apiservers", "OK"],
        ["etcd", "OK"],
        ["controllers", "OK"],
        ["observedGeneration", "OK"],
        ["deletion", "OK"],
        ["hotLoops", "OK"],
        ["repeatedLists", "OK"],
        ["warnings", "OK"],
        ["coverage", "OK"],
      ]);
      expect(check(report, "controllers").items).toMatchObject([
        { namespace: "kube-system", name: "calm-controller", holder: "calm-pod", state: "live" },
      ]);

      const t = await runCli(["doctor", "--sample", "1s"], { kubeconfig: env.kubeconfigPath });
      expect(t.code, t.stdout + t.stderr).toBe(0);
      expect(t.stdout).toMatch(
        /^\[OK\] {3}API server: http:\/\/127\.0\.0\.1:\d+ \(v1\.\d+\.0\+setpoint\): \/livez ok, \/readyz ok/m,
      );
      expect(t.stdout).toMatch(
        /OK {4}kube-system\/calm-controller: leader calm-pod, renewed \d+(ms|s) ago \(lease 15s\)/,
      );
      expect(t.stdout).toContain("[OK]   Hot loops: no hot loop seen (writes sampled for 1s");
      expect(t.stdout).toMatch(/Healthy: no problem found\.\n$/);
      expect(t.stdout).not.toContain("[WARN]");
      expect(t.stdout).not.toContain("[FAIL]");
    },
    TEST_TIMEOUT_MS,
  );
});

describe("setpoint doctor and a client that lists a whole collection again and again", () => {
  const env = startForFile(startWidgetEnv);

  it(
    "warns, naming the client and the resource, from the apiserver's metrics",
    async () => {
      // What a reconcile that lists every Widget per object looks like from the
      // server: whole-collection lists by one client, for as long as it runs.
      let running = true;
      let lists = 0;
      const lister = (async () => {
        for (let i = 0; running && i < 20_000; i++) {
          const r = await fetch(`${env.url}/apis/example.com/v1/widgets`, {
            headers: { "User-Agent": "quadratic-controller/v0.0.1 (linux/amd64)" },
          });
          await r.arrayBuffer();
          lists++;
          await sleep(20);
        }
      })();
      try {
        await eventually(() => lists >= 5, "the lister to start");
        const j = await runCli(["doctor", "-o", "json", "--sample", "2s"], {
          kubeconfig: env.kubeconfigPath,
        });
        expect(j.code, j.stdout + j.stderr).toBe(1);
        const report = JSON.parse(j.stdout) as DoctorReport;
        const c = check(report, "repeatedLists");
        expect(c.verdict).toBe("WARN");
        expect(c.items).toMatchObject([
          { client: "quadratic-controller", group: "example.com", resource: "widgets" },
        ]);
        expect(c.lines[0]).toMatch(
          /^quadratic-controller: \d+ lists of widgets\.example\.com in \d/,
        );
      } finally {
        running = false;
        await lister;
      }
    },
    TEST_TIMEOUT_MS,
  );
});

describe("setpoint doctor with planted problems", () => {
  const env = startForFile(startWidgetEnv);
  let mgr: Manager;
  const ns = "planted";

  beforeAll(async () => {
    await env.client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    mgr = electedManager(env.client, "planted-pod", "planted-controllers");
    // A hot loop: rewrites status on every pass, which wakes it again.
    mgr
      .controller("hotloop")
      .for(WIDGET, { predicates: [matching((o) => o.metadata.name === "hot")] })
      .complete(async (req, ctx) => {
        const w = await ctx.reader.get<Widget>(WIDGET, req.name, req.namespace);
        const passes = Number(w.status?.passes ?? 0) + 1;
        await sleep(20); // hot, but kind to a shared machine
        await ctx.client.updateStatus({
          ...w,
          status: { observedGeneration: w.metadata.generation, passes },
        });
      });
    // A loop that writes nothing: it requeues one key at once, again and again.
    mgr
      .controller("spinner")
      .for(CONFIGMAP, {
        predicates: [matching((o) => o.metadata.namespace === ns && o.metadata.name === "spin")],
      })
      .complete(async () => {
        await sleep(5); // hot, but kind to a shared machine
        return { requeueAfter: 0 };
      });
    // A controller that rejects a spec it cannot act on.
    mgr
      .controller("strict")
      .for(WIDGET, { predicates: [matching((o) => o.metadata.name === "bad")] })
      .complete(async () => {
        throw new TerminalError("spec.size must be positive", { reason: "InvalidSpec" });
      });
    await mgr.start();
    await mgr.elected();

    // observedGeneration lag: the status says generation 1, the spec moved on.
    await env.client.create(widget("lagging", ns, { spec: { size: 1 } }));
    const w = await env.client.get<Widget>(WIDGET, "lagging", ns);
    await env.client.updateStatus({ ...w, status: { observedGeneration: 1 } });
    await env.client.patch(WIDGET, "lagging", ns, { spec: { size: 5 } }, { type: "merge" });
    // Caught up: not reported.
    await env.client.create(widget("fine", ns));
    const f = await env.client.get<Widget>(WIDGET, "fine", ns);
    await env.client.updateStatus({ ...f, status: { observedGeneration: 1 } });
    // Stuck on a finalizer nobody declares.
    await env.client.create(widget("stuck", ns, { finalizers: ["example.com/left-behind"] }));
    await env.client.delete(WIDGET, "stuck", ns);
    // A leader that stopped renewing a minute ago.
    const renewed = microTime(new Date(Date.now() - 60_000));
    await env.client.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "crashed-controller", namespace: "kube-system" },
      spec: {
        holderIdentity: "pod-z",
        leaseDurationSeconds: 15,
        renewTime: renewed,
        acquireTime: renewed,
      },
    });
    // A live manager publishing per-key reconcile counts (the runtime's contract).
    const now = microTime(new Date());
    await env.client.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: "counting-controller",
        namespace: "kube-system",
        annotations: {
          [RECONCILE_STATS_ANNOTATION]: JSON.stringify({
            windowSeconds: 60,
            controllers: {
              poller: {
                reconciles: 1300,
                topKeys: [
                  { key: `${ns}/polled`, reconciles: 1200 },
                  { key: `${ns}/quiet`, reconciles: 12 },
                ],
              },
            },
          }),
        },
      },
      spec: {
        holderIdentity: "pod-c",
        leaseDurationSeconds: 3600,
        renewTime: now,
        acquireTime: now,
      },
    });
    // The hot loop and the failing object.
    await env.client.create(widget("hot", ns));
    await env.client.create(widget("bad", ns, { spec: { size: -1 } }));
    await eventually(async () => {
      const hot = await env.client.get<Widget>(WIDGET, "hot", ns);
      return Number(hot.status?.passes ?? 0) > 10;
    });
    // The spinning key, and the leader's Lease publishing it (renewed every 2 s).
    await env.client.create({ ...CONFIGMAP, metadata: { name: "spin", namespace: ns } });
    await eventually(
      async () => {
        const lease = await env.client.get<KubeObject>(
          { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
          "planted-controllers",
          "kube-system",
        );
        const stats = JSON.parse(lease.metadata.annotations?.[RECONCILE_STATS_ANNOTATION] ?? "{}");
        const top = stats.controllers?.spinner?.topKeys?.[0];
        return top?.key === `${ns}/spin` && top.reconciles >= 120;
      },
      "condition",
      20_000,
    );
    // Let the lag and the deletion outlast their thresholds (timestamps have 1 s resolution).
    await sleep(2_100);
  }, 60_000);

  afterAll(async () => {
    await mgr?.stop();
  });

  it(
    "finds each problem and exits 1",
    async () => {
      const r = await runCli(
        [
          "doctor",
          "-o",
          "json",
          "--sample",
          "3s",
          "--lag-threshold",
          "2s",
          "--stuck-threshold",
          "1s",
        ],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code, r.stdout + r.stderr).toBe(1);
      const report = JSON.parse(r.stdout) as DoctorReport;
      expect(report.healthy).toBe(false);
      expect(check(report, "apiserver").verdict).toBe("OK");

      // The hot loop, with its writer; the well-behaved objects are not in it.
      const hot = check(report, "hotLoops");
      expect(hot.verdict).toBe("WARN");
      const loops = hot.items as {
        name: string;
        namespace?: string;
        statusWrites?: number;
        specWrites?: number;
        writers?: string[];
        key?: string;
      }[];
      const hotWidget = loops.find((l) => l.name === "hot");
      expect(hotWidget).toMatchObject({
        namespace: ns,
        specWrites: 0,
        writers: ["hotloop (status)"],
      });
      expect(hotWidget?.statusWrites).toBeGreaterThanOrEqual(5);
      expect(loops.filter((l) => l.name !== undefined).map((l) => l.name)).toEqual(["hot"]);
      // The published per-key counts: the polled key, not the quiet one; and the key
      // the real spinner requeues, which no write sample can see.
      const hotKeys = (hot.items as { key?: string }[]).filter((l) => l.key !== undefined) as {
        controller: string;
        key: string;
        reconciles: number;
        lease: string;
      }[];
      expect(hotKeys.find((k) => k.controller === "poller")).toMatchObject({
        key: `${ns}/polled`,
        reconciles: 1200,
        lease: "counting-controller",
      });
      expect(hotKeys.some((k) => k.key === `${ns}/quiet`)).toBe(false);
      const spinning = hotKeys.find((k) => k.controller === "spinner");
      expect(spinning).toMatchObject({ key: `${ns}/spin`, lease: "planted-controllers" });
      expect(spinning?.reconciles).toBeGreaterThanOrEqual(120);
      expect(loops.some((l) => l.name === "spin")).toBe(false);

      // Behind: "lagging" (observed 1 of 2), and "bad", which its controller rejects
      // without ever stamping it. Caught up: "fine" and "hot".
      const lag = check(report, "observedGeneration");
      expect(lag.verdict).toBe("WARN");
      const lags = new Map(
        (lag.items as { name: string; behindForMs: number }[]).map((l) => [l.name, l]),
      );
      expect([...lags.keys()].sort()).toEqual(["bad", "lagging"]);
      expect(lags.get("lagging")).toMatchObject({
        kind: "Widget",
        namespace: ns,
        generation: 2,
        observedGeneration: 1,
      });
      expect(lags.get("bad")).not.toHaveProperty("observedGeneration");
      expect(lags.get("lagging")?.behindForMs).toBeGreaterThanOrEqual(2_000);

      const ctl = check(report, "controllers");
      expect(ctl.verdict).toBe("FAIL");
      const states = Object.fromEntries(
        (ctl.items as { name: string; state: string }[]).map((l) => [l.name, l.state]),
      );
      expect(states).toEqual({
        "counting-controller": "live",
        "crashed-controller": "expired",
        "planted-controllers": "live",
      });

      const del = check(report, "deletion");
      expect(del.verdict).toBe("FAIL");
      expect(del.items).toMatchObject([{ name: "stuck", finalizers: [{ state: "abandoned" }] }]);

      const warn = check(report, "warnings");
      expect(warn.verdict).toBe("WARN");
      expect(warn.items).toMatchObject([
        {
          component: "strict",
          reason: "InvalidSpec",
          object: `Widget ${ns}/bad`,
          message: "spec.size must be positive",
          lease: "kube-system/planted-controllers",
          terminal: true,
        },
      ]);
      expect(warn.summary).toContain("1 of them terminal reconcile errors");
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "prints the same findings for people",
    async () => {
      const r = await runCli(
        ["doctor", "--sample", "2s", "--lag-threshold", "2s", "--stuck-threshold", "1s"],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toContain(
        "[FAIL] Controllers: 3 leader Leases: 1 expired, 0 without a leader",
      );
      expect(r.stdout).toMatch(
        /FAIL {2}kube-system\/crashed-controller: leader pod-z last renewed 1m\d*s? ago, lease is 15s/,
      );
      expect(r.stdout).toMatch(
        new RegExp(
          `\\[WARN\\] Spec rollout: 2 objects behind their spec for longer than 2s\\n(\\s+Widget.*\\n)*\\s+Widget\\.example\\.com ${ns}/lagging: generation 2, observed 1, behind for \\d+s\\n`,
        ),
      );
      expect(r.stdout).toMatch(
        new RegExp(
          `Widget\\.example\\.com ${ns}/hot: \\d+ writes in \\d+s \\(\\d+ status\\); written by hotloop \\(status\\)`,
        ),
      );
      expect(r.stdout).toContain(
        `poller (lease kube-system/counting-controller) reconciled ${ns}/polled 1200 times in 60s`,
      );
      expect(r.stdout).toMatch(
        new RegExp(
          `spinner \\(lease kube-system/planted-controllers\\) reconciled ${ns}/spin \\d+ times in 60s`,
        ),
      );
      expect(r.stdout).toContain(
        `strict (lease kube-system/planted-controllers): terminal error InvalidSpec on Widget ${ns}/bad`,
      );
      expect(r.stdout).toMatch(/Problems found: 2 failures, 3 warnings\.\n$/);
    },
    TEST_TIMEOUT_MS,
  );
});

describe("setpoint doctor without an apiserver", () => {
  it("reports it unreachable and exits 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), "doctor-"));
    try {
      const kubeconfig = join(dir, "kubeconfig");
      writeFileSync(
        kubeconfig,
        JSON.stringify({
          clusters: [{ name: "c", cluster: { server: "http://127.0.0.1:9" } }],
          users: [{ name: "u", user: {} }],
          contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
          "current-context": "x",
        }),
      );
      const r = await runCli(["doctor", "--kubeconfig", kubeconfig]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        /^\[FAIL\] API server: http:\/\/127\.0\.0\.1:9: unreachable: .*ECONNREFUSED/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rejects bad flags with exit code 2", async () => {
    const r = await runCli(["doctor", "--lag-threshold", "later"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--lag-threshold must be a duration");
  });
});
