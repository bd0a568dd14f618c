/**
 * The service account controller against a real apiserver: every namespace gets a
 * `default` ServiceAccount, one deleted by hand comes back, and a namespace being
 * deleted gets none.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SERVICE_ACCOUNT } from "../../src/controllers/index.ts";
import { startTestEnv } from "../../src/testenv/testenv.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { sleep } from "../helpers/poll.ts";
import { startForFile } from "../helpers/test-server.ts";
import { CM, eventually, find, NS, startControllers } from "./helpers.ts";

const SA = { apiVersion: "v1", kind: "ServiceAccount" } as const;

const env = startForFile(() => startTestEnv({ controllers: false }));
const cm = startForFile(() =>
  startControllers({
    restConfig: env.config,
    disabled: ["garbage-collector", "namespace", "event-ttl"],
  }),
);

beforeAll(async () => {
  await eventually(() => cm.manager.isLeader, "controllers running");
});

const defaultAccount = (ns: string) => find(env.client, SA, DEFAULT_SERVICE_ACCOUNT, ns);

describe("service account controller", () => {
  it("gives every namespace a default ServiceAccount, also the ones made before it ran", async () => {
    for (const ns of ["default", "kube-system"]) {
      await eventually(() => defaultAccount(ns), `default account in ${ns}`);
    }
    const ns = await freshNamespace(env.client);
    const sa = await eventually(() => defaultAccount(ns), "default account");
    expect(sa.metadata.uid).toBeTruthy();
    // Other accounts are left alone.
    await env.client.create({ ...SA, metadata: { name: "builder", namespace: ns } });
    await sleep(300);
    const names = (await env.client.list(SA, { namespace: ns })).items.map((s) => s.metadata.name);
    expect(names.sort()).toEqual(["builder", DEFAULT_SERVICE_ACCOUNT]);
  });

  it("puts a deleted default ServiceAccount back, as a new object", async () => {
    const ns = await freshNamespace(env.client);
    const first = await eventually(() => defaultAccount(ns), "default account");
    await env.client.delete(SA, DEFAULT_SERVICE_ACCOUNT, ns);
    const again = await eventually(async () => {
      const sa = await defaultAccount(ns);
      return sa && sa.metadata.uid !== first.metadata.uid ? sa : undefined;
    }, "a new default account");
    expect(again.metadata.name).toBe(DEFAULT_SERVICE_ACCOUNT);
  });

  it("makes none in a namespace being deleted", async () => {
    const ns = await freshNamespace(env.client);
    await eventually(() => defaultAccount(ns), "default account");
    // No namespace controller runs here, so the namespace stays Terminating.
    await env.client.create({ ...CM, metadata: { name: "keep", namespace: ns } });
    await env.client.delete(NS, ns);
    await eventually(async () => (await find(env.client, NS, ns))?.metadata.deletionTimestamp);
    await env.client.delete(SA, DEFAULT_SERVICE_ACCOUNT, ns);
    await sleep(500);
    expect(await defaultAccount(ns)).toBeUndefined();
  });
});
