/**
 * The resource store on its own, with no HTTP: a real SQLite file, the watch
 * caches, and the built-in registry, driven through ResourceStore's methods.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EVERYTHING_FIELDS } from "../../packages/api/src/fields.ts";
import { EVERYTHING } from "../../packages/api/src/labels.ts";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { ResourceStore, type StoreServices } from "../../src/apiserver/store/index.ts";
import { customResourceDefinitions } from "../../src/registry/crd/definition.ts";
import type { Registry } from "../../src/registry/registry.ts";
import { storageVersion } from "../../src/registry/types.ts";
import { crdOf } from "../helpers/crd.ts";
import { openStoreServices, type StoreRig } from "../helpers/store-services.ts";

const user = { name: "tester", groups: ["system:authenticated"] };

let rig: StoreRig;
let registry: Registry;
let services: StoreServices;

beforeEach(async () => {
  rig = await openStoreServices("resource-store");
  ({ registry, services } = rig);
});

afterEach(async () => {
  await rig.close();
});

function resource(plural: string, namespace?: string, name?: string): ResourceStore {
  const definition = registry.get("", plural)!;
  return new ResourceStore(services, {
    definition,
    version: storageVersion(definition),
    user,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
  });
}

async function createNamespace(name: string): Promise<KubeObject> {
  return resource("namespaces").create(
    { apiVersion: "v1", kind: "Namespace", metadata: { name } },
    { dryRun: false, manager: "test" },
  );
}

function configMap(name: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "apps" },
    data,
  } as KubeObject;
}

describe("ResourceStore", () => {
  it("creates, reads, updates and deletes an object", async () => {
    await createNamespace("apps");
    const created = await resource("configmaps", "apps").create(configMap("one", { a: "1" }), {
      dryRun: false,
      manager: "test",
    });
    expect(created.metadata.uid).toBeTruthy();
    expect(created.metadata.managedFields?.[0]?.manager).toBe("test");

    const one = resource("configmaps", "apps", "one");
    expect((await one.get()).data).toEqual({ a: "1" });

    const outcome = await one.update({ dryRun: false, manager: "test", allowCreate: false }, () =>
      configMap("one", { a: "2" }),
    );
    expect(outcome.action).toBe("update");
    expect(Number(outcome.obj.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );

    // A ConfigMap's deletion answers with a Status, not the object.
    expect(one.returnsDeletedObject).toBe(false);
    const gone = await one.delete({ dryRun: false });
    expect(gone.deleted).toBe(true);
    await expect(one.get()).rejects.toMatchObject({ code: 404 });
  });

  it("refuses a write into a namespace that does not exist", async () => {
    await expect(
      resource("configmaps", "nowhere").create(configMap("x", {}), {
        dryRun: false,
        manager: "test",
      }),
    ).rejects.toMatchObject({ code: 404 });
  });

  it("decides an update again after losing a race, with no request to re-read", async () => {
    await createNamespace("apps");
    await resource("configmaps", "apps").create(configMap("race", { n: "0" }), {
      dryRun: false,
      manager: "test",
    });
    const race = resource("configmaps", "apps", "race");
    let calls = 0;
    const outcome = await race.update(
      { dryRun: false, manager: "test", allowCreate: false },
      async (current) => {
        calls++;
        if (calls === 1) {
          // Another writer gets in between this read and its write.
          await resource("configmaps", "apps", "race").update(
            { dryRun: false, manager: "other", allowCreate: false },
            () => configMap("race", { ...(current?.data as Record<string, string>), other: "1" }),
          );
        }
        return configMap("race", { ...(current?.data as Record<string, string>), mine: "1" });
      },
    );
    expect(calls).toBe(2);
    expect(outcome.obj.data).toEqual({ n: "0", other: "1", mine: "1" });
  });

  it("follows the Namespace strategy's deletion rules", async () => {
    await createNamespace("doomed");
    const ns = resource("namespaces", undefined, "doomed");
    expect(ns.returnsDeletedObject).toBe(true);
    const first = await ns.delete({ dryRun: false });
    expect(first.deleted).toBe(false);
    expect(first.obj.metadata.deletionTimestamp).toBeTruthy();
    expect(first.obj.metadata.deletionGracePeriodSeconds).toBeUndefined();
    expect((first.obj.status as { phase?: string }).phase).toBe("Terminating");
    // spec.finalizers keep it: deleting again changes nothing.
    const again = await ns.delete({ dryRun: false });
    expect(again).toMatchObject({ deleted: false });
    expect(again.obj.metadata.resourceVersion).toBe(first.obj.metadata.resourceVersion);
    // Creating into it is refused while it terminates.
    await expect(
      resource("configmaps", "doomed").create(
        { ...configMap("late", {}), metadata: { name: "late" } },
        { dryRun: false, manager: "test" },
      ),
    ).rejects.toMatchObject({ code: 403 });

    await createNamespace("default");
    await expect(
      resource("namespaces", undefined, "default").delete({ dryRun: false }),
    ).rejects.toMatchObject({
      code: 403,
      message: 'namespaces "default" is forbidden: this namespace may not be deleted',
    });
  });

  it("reads a recent state for the server's own readers: a copy of the object its write kept", async () => {
    registry.add(customResourceDefinitions);
    const crds = (name?: string) =>
      new ResourceStore(services, {
        definition: customResourceDefinitions,
        version: storageVersion(customResourceDefinitions),
        user,
        ...(name !== undefined ? { name } : {}),
      });
    const crd = crdOf("widgets", "Widget", {
      type: "object",
      properties: { spec: { type: "string", enum: ["a", "b"] } },
    });
    const created = await crds().create(crd, { dryRun: false, manager: "test" });
    const one = crds("widgets.example.com");
    const key = one.key();
    const rev = Number(created.metadata.resourceVersion);
    expect(await (await one.watchCache()).waitFor(rev, 30_000)).toBe(true);
    // A new CRD is kept for the status write that follows its create; a ConfigMap is not.
    expect(services.decoded.get(key, rev, undefined)).toEqual(created);
    await createNamespace("apps");
    const cm = await resource("configmaps", "apps").create(configMap("new", {}), {
      dryRun: false,
      manager: "test",
    });
    const cmKey = resource("configmaps", "apps", "new").key();
    expect(services.decoded.get(cmKey, Number(cm.metadata.resourceVersion), undefined)).toBe(
      undefined,
    );

    const stored = await one.get();
    const recent = await one.getRecent();
    expect(recent).toEqual(stored);
    // A private copy: changing it changes nothing the next reader gets.
    (recent.spec as { group: string }).group = "changed.example.com";
    recent.metadata.labels = { changed: "yes" };
    expect(await one.getRecent()).toEqual(stored);
    // Nothing kept: the cache's JSON, parsed.
    services.decoded.delete(key);
    expect(await one.getRecent()).toEqual(stored);
    // After an update, the state updated.
    const updated = await one.update(
      { dryRun: false, manager: "test", allowCreate: false },
      (c) => ({
        ...c!,
        metadata: { ...c!.metadata, labels: { tier: "x" } },
      }),
    );
    expect(
      await (await one.watchCache()).waitFor(Number(updated.obj.metadata.resourceVersion), 30_000),
    ).toBe(true);
    expect(await one.getRecent()).toEqual(await one.get());
    expect((await one.getRecent()).metadata.labels).toEqual({ tier: "x" });
    await expect(crds("gadgets.example.com").getRecent()).rejects.toMatchObject({ code: 404 });
  });

  it("answers a read of any state from the primed watch cache", async () => {
    await createNamespace("apps");
    const created = await resource("configmaps", "apps").create(configMap("cached", { a: "1" }), {
      dryRun: false,
      manager: "test",
    });
    const cached = resource("configmaps", "apps", "cached");
    const cache = await cached.watchCache();
    const rev = Number(created.metadata.resourceVersion);
    expect(await cache.waitFor(rev, 30_000)).toBe(true);
    expect(cached.cached()).toBeDefined();
    expect(await cached.get({ anyState: true })).toMatchObject({
      metadata: { name: "cached", resourceVersion: created.metadata.resourceVersion },
      data: { a: "1" },
    });
    const listed = await resource("configmaps", "apps").listCached({
      labels: EVERYTHING,
      fields: EVERYTHING_FIELDS,
    });
    expect(listed.entries.map((e) => JSON.parse(e.json).metadata.name)).toEqual(["cached"]);
  });
});
