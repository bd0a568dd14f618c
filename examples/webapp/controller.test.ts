/**
 * The WebApp controller against a real Setpoint apiserver (with the garbage
 * collector), no processes: the Deployment's status is written here as the
 * deployment controller would write it. It makes its three objects controlled
 * by the WebApp with server-side apply under its own field manager, reports the
 * rollout in status stamped with the generation, notifies once on first Ready,
 * sets a hand edit back (the editor is warned), writes nothing at steady state,
 * refuses to take over a foreign object, and leaves deletion to the collector.
 */
import type { Deployment, KubeObject } from "@setpoint/api";
import {
  findCondition,
  isNotFound,
  type Kind,
  Manager,
  oneShotAnnotation,
  readOneShotRecord,
  retryOnConflict,
  silentLogger,
} from "@setpoint/runtime";
import { startTestEnv, type TestEnv } from "setpoint/testenv";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type IdempotencyServer,
  startIdempotencyServer,
} from "../../test/helpers/idempotency-server.ts";
import { FIELD_MANAGER } from "./children.ts";
import { addWebAppController, NOTIFY_ACTION } from "./controller.ts";
import {
  DeploymentKind,
  IngressKind,
  ServiceKind,
  type WebApp,
  WebAppKind,
  webAppCrd,
} from "./types.ts";

const WAIT = { timeout: 10_000, interval: 25 };
const NS = "default";

let env: TestEnv;
let mgr: Manager;
let stop: AbortController;
let notices: IdempotencyServer;

beforeAll(async () => {
  env = await startTestEnv({ crds: [webAppCrd()], controllers: ["garbage-collector"] });
  notices = await startIdempotencyServer();
  mgr = new Manager({ restConfig: env.config, logger: silentLogger() });
  addWebAppController(mgr);
  stop = new AbortController();
  await mgr.start(stop.signal);
});

afterAll(async () => {
  stop?.abort();
  await mgr?.done;
  await notices?.close();
  await env?.stop();
});

function webApp(name: string, spec: Partial<WebApp["spec"]> = {}): WebApp {
  return {
    apiVersion: "examples.setpoint.dev/v1alpha1",
    kind: "WebApp",
    metadata: { name, namespace: NS },
    spec: { image: "hello", host: `${name}.example`, replicas: 2, ...spec },
  };
}

const get = (name: string) => env.client.get(WebAppKind, name, NS);

/** Writes the Deployment's status as the deployment controller would once `ready` replicas of the current template are ready. */
async function rollOut(name: string, ready: number): Promise<void> {
  await vi.waitFor(
    () =>
      retryOnConflict(async () => {
        const d = await env.client.get(DeploymentKind, name, NS);
        const want = d.spec?.replicas ?? 1;
        await env.client.updateStatus<Deployment>({
          ...d,
          status: {
            observedGeneration: d.metadata.generation,
            replicas: want,
            updatedReplicas: want,
            readyReplicas: ready,
            availableReplicas: ready,
          },
        });
      }),
    WAIT,
  );
}

async function settled(name: string, ready: "True" | "False"): Promise<WebApp> {
  let app: WebApp | undefined;
  await vi.waitFor(async () => {
    app = await get(name);
    expect(app.status?.observedGeneration).toBe(app.metadata.generation);
    expect(findCondition(app.status?.conditions, "Ready")?.status, JSON.stringify(app.status)).toBe(
      ready,
    );
  }, WAIT);
  return app as WebApp;
}

describe("the WebApp controller", () => {
  it("owns a Deployment, a Service and an Ingress, applied under its own field manager", async () => {
    const app = await env.client.create(
      webApp("shop", { path: "/store", env: [{ name: "MODE", value: "fast" }] }),
    );
    const status = await settled("shop", "False");
    expect(status.status).toMatchObject({ readyReplicas: 0, url: "http://shop.example/store" });
    expect(findCondition(status.status?.conditions, "Ready")).toMatchObject({
      reason: "RollingOut",
      observedGeneration: 1,
    });
    expect(findCondition(status.status?.conditions, "Progressing")).toMatchObject({
      status: "True",
      reason: "RollingOut",
    });
    const d = await env.client.get(DeploymentKind, "shop", NS);
    const s = await env.client.get(ServiceKind, "shop", NS);
    const i = await env.client.get(IngressKind, "shop", NS);
    for (const o of [d, s, i] as KubeObject[]) {
      expect(o.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          kind: "WebApp",
          name: "shop",
          uid: app.metadata.uid,
          controller: true,
        }),
      ]);
      expect(o.metadata.managedFields?.map((e) => [e.manager, e.operation])).toContainEqual([
        FIELD_MANAGER,
        "Apply",
      ]);
    }
    expect(d.spec?.replicas).toBe(2);
    expect(d.spec?.template.spec?.containers[0]).toMatchObject({
      image: "hello",
      env: [
        { name: "PORT", value: "8080" },
        { name: "MODE", value: "fast" },
      ],
    });
    expect(s.spec?.ports?.[0]).toMatchObject({ port: 80, targetPort: 8080 });
    expect(i.spec).toMatchObject({ ingressClassName: "setpoint" });
    expect(i.spec?.rules?.[0]).toMatchObject({
      host: "shop.example",
      http: {
        paths: [
          {
            path: "/store",
            pathType: "Prefix",
            backend: { service: { name: "shop", port: { number: 80 } } },
          },
        ],
      },
    });
    // Server defaults and others' fields are kept: the Service got a cluster IP, the Deployment a strategy.
    expect(s.spec?.clusterIP).toBeTruthy();
    expect(d.spec?.strategy?.type).toBe("RollingUpdate");
  });

  it("is Ready once the Deployment has rolled out and its replicas are ready; notifies once", async () => {
    await env.client.create(webApp("notified", { notify: { url: `${notices.url}/charges` } }));
    await settled("notified", "False");
    await rollOut("notified", 1);
    await settled("notified", "False"); // 1 of 2 ready
    expect(notices.performed.filter((p) => p.body.includes('"notified"'))).toEqual([]);
    await rollOut("notified", 2);
    const ready = await settled("notified", "True");
    expect(ready.status?.readyReplicas).toBe(2);
    expect(findCondition(ready.status?.conditions, "Ready")).toMatchObject({
      reason: "Available",
      message: "2 of 2 replicas ready",
    });
    expect(findCondition(ready.status?.conditions, "Progressing")).toMatchObject({
      status: "True",
      reason: "RolledOut",
    });
    await vi.waitFor(async () => {
      expect(readOneShotRecord(await get("notified"), NOTIFY_ACTION)).toMatchObject({
        state: "Succeeded",
      });
    }, WAIT);
    // More passes (a label, a status change) notify nobody again.
    await env.client.patch(
      WebAppKind,
      "notified",
      NS,
      { metadata: { labels: { touched: "1" } } },
      { type: "merge" },
    );
    await rollOut("notified", 1);
    await settled("notified", "False");
    await rollOut("notified", 2);
    await settled("notified", "True");
    const app = await get("notified");
    expect(
      notices.performed.filter((p) => p.key.startsWith(`${app.metadata.uid}/`)).map((p) => p.key),
    ).toEqual([`${app.metadata.uid}/${NOTIFY_ACTION}/first-ready`]);
    expect(app.metadata.annotations?.[oneShotAnnotation(NOTIFY_ACTION)]).toBeDefined();
  });

  it("sets a hand edit of a field it manages back, and the editor is warned", async () => {
    await env.client.create(webApp("edited"));
    await settled("edited", "False");
    const res = await env.client.raw("PATCH", `/apis/apps/v1/namespaces/${NS}/deployments/edited`, {
      query: { fieldManager: "kubectl-edit" },
      contentType: "application/merge-patch+json",
      body: { spec: { replicas: 7 } },
    });
    expect(res.status).toBe(200);
    expect(String(res.headers.warning)).toContain(
      'Deployment default/edited is managed by its controller WebApp/edited (field manager \\"webapp-controller\\")',
    );
    await vi.waitFor(async () => {
      expect((await env.client.get(DeploymentKind, "edited", NS)).spec?.replicas).toBe(2);
    }, WAIT);
    // A field it does not manage stays as the person set it.
    await env.client.patch(
      DeploymentKind,
      "edited",
      NS,
      { spec: { minReadySeconds: 5 } },
      { type: "merge" },
    );
    await env.client.patch(WebAppKind, "edited", NS, { spec: { replicas: 3 } }, { type: "merge" });
    await vi.waitFor(async () => {
      const d = await env.client.get(DeploymentKind, "edited", NS);
      expect(d.spec?.replicas).toBe(3);
      expect(d.spec?.minReadySeconds).toBe(5);
    }, WAIT);
  });

  it("writes nothing when nothing changed", async () => {
    await env.client.create(webApp("quiet"));
    await rollOut("quiet", 2);
    await settled("quiet", "True");
    const versions = async () =>
      Promise.all([
        get("quiet"),
        env.client.get(DeploymentKind, "quiet", NS),
        env.client.get(ServiceKind, "quiet", NS),
        env.client.get(IngressKind, "quiet", NS),
      ]).then((os) => os.map((o) => o.metadata.resourceVersion));
    const before = await versions();
    // Wake it twice (its own objects' events), then give it time to (not) write.
    await env.client.patch(
      ServiceKind,
      "quiet",
      NS,
      { metadata: { labels: { extra: "1" } } },
      { type: "merge" },
    );
    await env.client.patch(
      IngressKind,
      "quiet",
      NS,
      { metadata: { annotations: { note: "x" } } },
      { type: "merge" },
    );
    await new Promise((r) => setTimeout(r, 1000));
    const after = await versions();
    expect([after[0], after[1]]).toEqual([before[0], before[1]]);
  });

  it("follows a new image: Progressing until the Deployment rolls it out, observedGeneration stamped", async () => {
    await env.client.create(webApp("upgrade"));
    await rollOut("upgrade", 2);
    const done = await settled("upgrade", "True");
    // Every status written from here on, to check that none calls generation 2
    // rolled out before its Deployment did (the Deployment as applied, not a
    // cached copy from before the template changed).
    const watch = env.client.watch(WebAppKind, {
      namespace: NS,
      fieldSelector: "metadata.name=upgrade",
      resourceVersion: done.metadata.resourceVersion,
    });
    const written: WebApp[] = [];
    const watching = (async () => {
      for await (const ev of watch) if (ev.type === "MODIFIED") written.push(ev.object);
    })();
    await env.client.patch(
      WebAppKind,
      "upgrade",
      NS,
      { spec: { image: "hello:2" } },
      { type: "merge" },
    );
    const rolling = await settled("upgrade", "False");
    await new Promise((r) => setTimeout(r, 500));
    watch.close();
    await watching;
    const early = written.filter(
      (w) =>
        w.status?.observedGeneration === 2 &&
        findCondition(w.status?.conditions, "Ready")?.status === "True",
    );
    expect(written.length).toBeGreaterThan(0);
    expect(early).toEqual([]);
    expect(rolling.metadata.generation).toBe(2);
    expect(findCondition(rolling.status?.conditions, "Ready")).toMatchObject({
      reason: "RollingOut",
      observedGeneration: 2,
    });
    expect(
      (await env.client.get(DeploymentKind, "upgrade", NS)).spec?.template.spec?.containers[0]
        .image,
    ).toBe("hello:2");
    await rollOut("upgrade", 2);
    await settled("upgrade", "True");
  });

  it("does not take over an object it does not control: Ready=False, NameConflict", async () => {
    await env.client.create({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "taken", namespace: NS },
      spec: { ports: [{ port: 9999 }] },
    });
    await env.client.create(webApp("taken"));
    await vi.waitFor(async () => {
      const c = findCondition((await get("taken")).status?.conditions, "Ready");
      expect(c).toMatchObject({ status: "False", reason: "NameConflict" });
      expect(c?.message).toContain(
        "Service default/taken exists and is not controlled by this WebApp",
      );
    }, WAIT);
    const s = await env.client.get(ServiceKind, "taken", NS);
    expect(s.metadata.ownerReferences).toBeUndefined();
    expect(s.spec?.ports?.map((p) => p.port)).toEqual([9999]);
  });

  it("leaves deletion to the garbage collector: what it owned goes with it", async () => {
    await env.client.create(webApp("gone"));
    await settled("gone", "False");
    await env.client.delete(WebAppKind, "gone", NS);
    await vi.waitFor(async () => {
      for (const k of [DeploymentKind, ServiceKind, IngressKind] as Kind[]) {
        const e = await env.client.get(k, "gone", NS).then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(isNotFound(e), k.kind).toBe(true);
      }
    }, WAIT);
  });
});
