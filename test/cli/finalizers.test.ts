/**
 * `setpoint finalizers` as a user runs it (`node bin/setpoint.mjs ...`) against a
 * real apiserver: objects stuck in deletion found across built-in and custom
 * kinds, a finalizer declared by a live controller (a runtime Manager with
 * leader election, started here) told from an abandoned one, clearing refused
 * without a terminal and without --yes, clearing with --yes (the object then
 * gone, a FinalizerCleared Event recorded), a concurrent change not clobbered,
 * and a Namespace's spec finalizer cleared through /finalize.
 */

import type { KubeObject } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isInvalid, isNotFound } from "../../packages/runtime/src/client/errors.ts";
import type { Manager } from "../../packages/runtime/src/manager/manager.ts";
import { clearPatch, planClear } from "../../src/cli/inspect/index.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile } from "../helpers/test-server.ts";
import {
  electedManager,
  runCli,
  runCliOnTerminal,
  startWidgetEnv,
  WIDGET,
  widget,
} from "./helpers.ts";

/** Several CLI runs on a loaded 2-core machine. */
const TEST_TIMEOUT_MS = 60_000;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
const LEASE_ID = "widget-controller";
const HANDLED = "example.com/cleanup";
const ABANDONED = "example.com/left-behind";

const env = startForFile(startWidgetEnv);
let mgr: Manager;
/** Creates `obj` and deletes it: held by its finalizers, it stays, in deletion. */
async function stuck(obj: KubeObject): Promise<KubeObject> {
  const created = await env.client.create(obj);
  const type = { apiVersion: obj.apiVersion ?? "", kind: obj.kind ?? "" };
  await env.client.delete(type, obj.metadata.name ?? "", obj.metadata.namespace);
  return created;
}

/** A ConfigMap held by `finalizers`. */
function configMap(name: string, ns: string, finalizers: string[]): KubeObject {
  return { ...CM, metadata: { name, namespace: ns, finalizers } };
}

async function events(ns: string): Promise<KubeObject[]> {
  return (await env.client.list<KubeObject>({ apiVersion: "v1", kind: "Event" }, { namespace: ns }))
    .items;
}

beforeAll(async () => {
  // A controller that declares HANDLED but is slow to clean up: it never removes it.
  mgr = electedManager(env.client, "pod-a", LEASE_ID);
  mgr
    .controller("widgets")
    .for(WIDGET)
    .withOptions({ finalizers: [HANDLED] })
    .complete(async () => {});
  await mgr.start();
  await mgr.elected();
}, 60_000);

afterAll(async () => {
  await mgr?.stop();
});

describe("setpoint finalizers list", () => {
  it(
    "finds stuck objects of built-in and custom kinds, handled or abandoned",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await stuck(widget("w1", ns, { finalizers: [HANDLED, ABANDONED] }));
      await stuck(configMap("c1", ns, [ABANDONED]));
      await env.client.create(configMap("alive", ns, [ABANDONED]));

      const r = await runCli(["finalizers", "list", "-n", ns], { kubeconfig: env.kubeconfigPath });
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.split("\n");
      expect(lines[0]).toMatch(/^KIND\s+NAMESPACE\/NAME\s+AGE\s+FINALIZERS$/);
      expect(r.stdout).toMatch(
        new RegExp(
          `Widget\\.example\\.com\\s+${ns}/w1\\s+\\d+(ms|s)\\s+${HANDLED} \\(handled by ${LEASE_ID}, leader pod-a, renewed \\d+(ms|s) ago\\)`,
        ),
      );
      expect(r.stdout).toContain(`${ABANDONED} (ABANDONED: no live controller declares it)`);
      expect(r.stdout).toMatch(new RegExp(`ConfigMap\\s+${ns}/c1\\s`));
      expect(r.stdout).not.toContain("alive");

      const j = await runCli(["finalizers", "list", "-n", ns, "-o", "json"], {
        kubeconfig: env.kubeconfigPath,
      });
      expect(j.code, j.stderr).toBe(0);
      const doc = JSON.parse(j.stdout) as {
        items: {
          kind: string;
          name: string;
          finalizers: {
            finalizer: string;
            state: string;
            handlers: { lease: string; holder: string }[];
          }[];
        }[];
      };
      const byName = new Map(doc.items.map((i) => [i.name, i]));
      expect([...byName.keys()].sort()).toEqual(["c1", "w1"]);
      expect(byName.get("w1")?.finalizers.map((f) => [f.finalizer, f.state])).toEqual([
        [HANDLED, "handled"],
        [ABANDONED, "abandoned"],
      ]);
      expect(byName.get("w1")?.finalizers[0].handlers).toMatchObject([
        { lease: LEASE_ID, holder: "pod-a" },
      ]);
      expect(byName.get("c1")?.finalizers.map((f) => f.state)).toEqual(["abandoned"]);

      const old = await runCli(["finalizers", "list", "-n", ns, "--older-than", "1h"], {
        kubeconfig: env.kubeconfigPath,
      });
      expect(old.code, old.stderr).toBe(0);
      expect(old.stdout).toBe("No object has been in deletion for 1h or longer.\n");
    },
    TEST_TIMEOUT_MS,
  );

  it("rejects bad flags with exit code 2", async () => {
    const r = await runCli(["finalizers", "list", "--older-than", "soon"], {
      kubeconfig: env.kubeconfigPath,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--older-than must be a duration");
  });
});

describe("setpoint finalizers clear", () => {
  it(
    "refuses without a terminal and without --yes, changing nothing",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await stuck(widget("w", ns, { finalizers: [ABANDONED] }));
      const r = await runCli(
        ["finalizers", "clear", "widgets.example.com/w", "-n", ns, "--finalizer", ABANDONED],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("stdin is not a terminal; pass --yes");
      // It showed what it would have done.
      expect(r.stdout).toContain(
        `Removing:    ${ABANDONED} (ABANDONED: no live controller declares it)`,
      );
      expect(r.stdout).toContain("the object is DELETED from the API at once");
      const still = await env.client.get<KubeObject>(WIDGET, "w", ns);
      expect(still.metadata.finalizers).toEqual([ABANDONED]);
      expect((await events(ns)).filter((e) => e.reason === "FinalizerCleared")).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "asks on a terminal: no changes nothing, yes removes",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await stuck(configMap("c", ns, [ABANDONED]));
      const args = [
        "finalizers",
        "clear",
        "cm/c",
        "-n",
        ns,
        "--finalizer",
        ABANDONED,
        "--kubeconfig",
        env.kubeconfigPath,
      ];
      const prompt = `Remove finalizer ${ABANDONED} from ConfigMap ${ns}/c? [y/N]`;
      const no = await runCliOnTerminal(args, prompt, "n");
      expect(no.code, no.stdout).toBe(1);
      expect(no.stdout).toContain("Nothing changed.");
      expect((await env.client.get<KubeObject>(CM, "c", ns)).metadata.finalizers).toEqual([
        ABANDONED,
      ]);
      const yes = await runCliOnTerminal(args, prompt, "y");
      expect(yes.code, yes.stdout).toBe(0);
      expect(yes.stdout).toContain(`Removed ${ABANDONED}; ConfigMap ${ns}/c is gone.`);
      expect(isNotFound(await env.client.get(CM, "c", ns).catch((e: unknown) => e))).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "records the Event on the Namespace when the object's namespace is being deleted",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await stuck(configMap("c", ns, [ABANDONED]));
      await env.client.delete({ apiVersion: "v1", kind: "Namespace" }, ns);
      const r = await runCli(
        ["finalizers", "clear", "cm/c", "-n", ns, "--finalizer", ABANDONED, "--yes"],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`recorded on Namespace ${ns} instead`);
      expect(isNotFound(await env.client.get(CM, "c", ns).catch((e: unknown) => e))).toBe(true);
      const recorded = (await events("default")).filter(
        (e) =>
          e.reason === "FinalizerCleared" && (e.involvedObject as { name: string }).name === ns,
      );
      expect(recorded).toHaveLength(1);
      expect(recorded[0].message).toMatch(
        new RegExp(`^ConfigMap ${ns}/c: Finalizer ${ABANDONED} removed by `),
      );
      expect(recorded[0].involvedObject).toMatchObject({ kind: "Namespace", name: ns });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "removes an abandoned finalizer, keeps the others, and records who did it",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await stuck(widget("w", ns, { finalizers: [HANDLED, ABANDONED] }));
      const r = await runCli(
        ["finalizers", "clear", "wd/w", "-n", ns, "--finalizer", ABANDONED, "--yes"],
        { user: "alice", kubeconfig: env.kubeconfigPath },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        `Afterwards:  the object waits on the remaining finalizers: ${HANDLED}`,
      );
      expect(r.stdout).toContain(
        `Removed ${ABANDONED}; Widget.example.com ${ns}/w still has: ${HANDLED}.`,
      );
      expect(r.stderr).not.toContain("LIVE controller");
      const after = await env.client.get<KubeObject>(WIDGET, "w", ns);
      expect(after.metadata.finalizers).toEqual([HANDLED]);
      const recorded = (await events(ns)).filter((e) => e.reason === "FinalizerCleared");
      expect(recorded).toHaveLength(1);
      expect(recorded[0].message).toBe(
        `Finalizer ${ABANDONED} removed by kubeconfig user setpoint, local user alice with "setpoint finalizers clear" (it was declared by no live controller)`,
      );
      expect(recorded[0].involvedObject).toMatchObject({
        apiVersion: "example.com/v1",
        kind: "Widget",
        name: "w",
        namespace: ns,
        uid: after.metadata.uid,
      });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "warns loudly when a live controller declares the finalizer, and the object goes with its last one",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      const created = await stuck(widget("w", ns, { finalizers: [HANDLED] }));
      const r = await runCli(
        ["finalizers", "clear", "Widget/w", "-n", ns, "--finalizer", HANDLED, "--yes"],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(
        `WARNING: ${HANDLED} is declared by a LIVE controller (${LEASE_ID}, leader pod-a)`,
      );
      expect(r.stderr).toContain("is NOT cleaned up");
      expect(r.stdout).toContain(`Removed ${HANDLED}; Widget.example.com ${ns}/w is gone.`);
      const gone = await env.client.get(WIDGET, "w", ns).catch((e: unknown) => e);
      expect(isNotFound(gone)).toBe(true);
      const recorded = (await events(ns)).filter((e) => e.reason === "FinalizerCleared");
      expect(recorded.map((e) => (e.involvedObject as { uid: string }).uid)).toEqual([
        created.metadata.uid,
      ]);
      expect(recorded[0].message).toContain(`declared by the live controller ${LEASE_ID}`);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "clears a Namespace's spec finalizer through /finalize",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await env.client.delete({ apiVersion: "v1", kind: "Namespace" }, ns);
      const list = await runCli(["finalizers", "list"], { kubeconfig: env.kubeconfigPath });
      expect(list.stdout).toMatch(
        new RegExp(
          `Namespace\\s+${ns}\\s+\\S+\\s+kubernetes \\[spec.finalizers\\] \\(built-in: namespace controller; NOT RUNNING: no live setpoint-controller-manager Lease\\)`,
        ),
      );
      const r = await runCli(["finalizers", "clear", "ns", ns, "--finalizer", "kubernetes", "-y"], {
        kubeconfig: env.kubeconfigPath,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(`Namespace ${ns} is gone.`);
      await eventually(async () =>
        isNotFound(
          await env.client
            .get({ apiVersion: "v1", kind: "Namespace" }, ns)
            .catch((e: unknown) => e),
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "says what is there when the finalizer is not, and exits 1",
    async () => {
      const ns = await freshNamespace(env.client, "f");
      await env.client.create(configMap("c", ns, [ABANDONED]));
      const r = await runCli(
        ["finalizers", "clear", "cm/c", "-n", ns, "--finalizer", "x.io/nope", "--yes"],
        { kubeconfig: env.kubeconfigPath },
      );
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        `ConfigMap ${ns}/c has no finalizer x.io/nope; its finalizers: ${ABANDONED}`,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it("does not clobber a concurrent change to the finalizers (the patch's test fails)", async () => {
    const ns = await freshNamespace(env.client, "f");
    await stuck(configMap("c", ns, ["a.io/one", "b.io/two"]));
    const read = await env.client.get<KubeObject>(CM, "c", ns);
    const plan = planClear(read, "b.io/two")!;
    // Meanwhile a controller removes the other finalizer.
    await env.client.patch(CM, "c", ns, [{ op: "remove", path: "/metadata/finalizers/0" }], {
      type: "json",
    });
    const err = await env.client
      .patch(CM, "c", ns, clearPatch(read, plan), { type: "json" })
      .catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect((await env.client.get<KubeObject>(CM, "c", ns)).metadata.finalizers).toEqual([
      "b.io/two",
    ]);
  });
});
