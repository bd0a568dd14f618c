/**
 * ServiceAccount admission and the root CA publisher, against a real apiserver
 * over https with only the serviceaccount and root-ca-cert-publisher controllers:
 * a Pod gets `default` as its ServiceAccount and the kube-api-access projected
 * volume (token expiring after 3607 s, `kube-root-ca.crt`'s ca.crt, the
 * namespace) mounted read-only in every container and init container; a Pod
 * naming a ServiceAccount that does not exist is refused as Kubernetes words it;
 * automountServiceAccountToken false on the Pod or its ServiceAccount leaves the
 * volume out; every namespace has the `kube-root-ca.crt` ConfigMap with the
 * server's CA, put back when deleted or changed.
 */
import type { Pod } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import {
  BUILTIN_CONTROLLER_NAMES,
  ROOT_CA_DESCRIPTION,
  ROOT_CA_DESCRIPTION_ANNOTATION,
} from "../../src/controllers/index.ts";
import { freshNamespace } from "../helpers/namespace.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const SA = { apiVersion: "v1", kind: "ServiceAccount" } as const;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
const MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

const server = startForFile(() =>
  startTestServer({
    tls: true,
    serviceAccountAdmission: true,
    controllers: {
      enabled: ["root-ca-cert-publisher"],
      disabled: BUILTIN_CONTROLLER_NAMES.filter(
        (n) => n !== "serviceaccount" && n !== "root-ca-cert-publisher",
      ),
    },
  }),
);

function pod(name: string, spec: Partial<Pod["spec"]> = {}): Pod {
  return {
    ...POD,
    metadata: { name },
    spec: {
      schedulerName: "nobody",
      initContainers: [{ name: "init", image: "x" }],
      containers: [
        { name: "a", image: "x" },
        { name: "b", image: "x", volumeMounts: [{ name: "own", mountPath: MOUNT }] },
      ],
      volumes: [{ name: "own", emptyDir: {} }],
      ...spec,
    },
  } as Pod;
}

async function namespaceWithDefaultAccount(): Promise<string> {
  const ns = await freshNamespace(server.client);
  await eventually(async () =>
    server.client.get(SA, "default", ns).then(
      () => true,
      () => false,
    ),
  );
  return ns;
}

describe("ServiceAccount admission", () => {
  it("defaults the ServiceAccount and mounts the kube-api-access volume where nothing is mounted", async () => {
    const ns = await namespaceWithDefaultAccount();
    const created = await server.client.create<Pod>({
      ...pod("p"),
      metadata: { name: "p", namespace: ns },
    });
    const spec = created.spec!;
    expect(spec.serviceAccountName).toBe("default");
    expect(spec.serviceAccount).toBe("default");
    const volume = spec.volumes?.find((v) => v.name.startsWith("kube-api-access-"));
    expect(volume?.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(volume?.projected).toEqual({
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
        {
          downwardAPI: {
            items: [
              {
                path: "namespace",
                fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" },
              },
            ],
          },
        },
      ],
    });
    const mount = { name: volume?.name, readOnly: true, mountPath: MOUNT };
    expect(spec.initContainers?.[0].volumeMounts).toEqual([mount]);
    expect(spec.containers[0].volumeMounts).toEqual([mount]);
    // A container with its own mount there keeps it.
    expect(spec.containers[1].volumeMounts).toEqual([{ name: "own", mountPath: MOUNT }]);
  });

  it("refuses a Pod whose ServiceAccount does not exist, as Kubernetes words it", async () => {
    const ns = await namespaceWithDefaultAccount();
    const err = await server.client
      .create<Pod>({
        ...pod("q", { serviceAccountName: "ghost" }),
        metadata: { name: "q", namespace: ns },
      })
      .then(
        () => undefined,
        (e: { status?: { code?: number; reason?: string; message?: string } }) => e.status,
      );
    expect(err?.code).toBe(403);
    expect(err?.reason).toBe("Forbidden");
    expect(err?.message).toBe(
      `pods "q" is forbidden: error looking up service account ${ns}/ghost: serviceaccount "ghost" not found`,
    );
  });

  it("leaves the volume out when the Pod or its ServiceAccount says not to mount it; the Pod's word wins", async () => {
    const ns = await namespaceWithDefaultAccount();
    await server.client.create({
      ...SA,
      metadata: { name: "quiet", namespace: ns },
      automountServiceAccountToken: false,
      imagePullSecrets: [{ name: "pull" }],
    });
    const volumes = (p: Pod) => (p.spec?.volumes ?? []).map((v) => v.name);
    const quiet = await server.client.create<Pod>({
      ...pod("r", { serviceAccountName: "quiet" }),
      metadata: { name: "r", namespace: ns },
    });
    expect(volumes(quiet)).toEqual(["own"]);
    expect(quiet.spec?.imagePullSecrets).toEqual([{ name: "pull" }]);
    const asked = await server.client.create<Pod>({
      ...pod("s", { serviceAccountName: "quiet", automountServiceAccountToken: true }),
      metadata: { name: "s", namespace: ns },
    });
    expect(volumes(asked)).toHaveLength(2);
    const off = await server.client.create<Pod>({
      ...pod("t", { automountServiceAccountToken: false }),
      metadata: { name: "t", namespace: ns },
    });
    expect(volumes(off)).toEqual(["own"]);
  });
});

describe("root CA publisher", () => {
  type ConfigMap = {
    metadata: { annotations?: Record<string, string>; uid?: string };
    data?: Record<string, string>;
  };
  const rootCa = (ns: string) =>
    server.client.get<ConfigMap>(CM, "kube-root-ca.crt", ns).catch(() => undefined);

  it("gives every namespace the kube-root-ca.crt ConfigMap with the server's CA, and puts it back", async () => {
    const ca = server.config.ca?.toString("utf8");
    expect(ca).toContain("BEGIN CERTIFICATE");
    for (const ns of ["default", "kube-system", await freshNamespace(server.client)]) {
      const cm = await eventually(() => rootCa(ns));
      expect(cm.data).toEqual({ "ca.crt": ca });
      expect(cm.metadata.annotations?.[ROOT_CA_DESCRIPTION_ANNOTATION]).toBe(ROOT_CA_DESCRIPTION);
    }
    const ns = await freshNamespace(server.client);
    const first = await eventually(() => rootCa(ns));
    await server.client.update({ ...CM, ...first, data: { "ca.crt": "tampered", extra: "x" } });
    await eventually(async () => (await rootCa(ns))?.data?.["ca.crt"] === ca);
    expect((await rootCa(ns))?.data).toEqual({ "ca.crt": ca });
    await server.client.delete(CM, "kube-root-ca.crt", ns);
    const again = await eventually(async () => {
      const cm = await rootCa(ns);
      return cm && cm.metadata.uid !== first.metadata.uid ? cm : undefined;
    });
    expect(again.data).toEqual({ "ca.crt": ca });
  });
});
