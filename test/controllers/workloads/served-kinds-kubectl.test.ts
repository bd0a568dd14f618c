/**
 * The kinds served without a control loop yet (DaemonSet, StatefulSet,
 * ReplicationController, CronJob, PersistentVolumeClaim, PersistentVolume),
 * with the real kubectl: applied from one manifest, stored with Kubernetes'
 * defaults, and listed by `kubectl get` with kubectl's columns.
 */
import type { KubeObject } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEnv } from "../../../src/testenv/testenv.ts";
import { Kubectl } from "../../e2e/helpers/kubectl.ts";
import { freshNamespace } from "../../helpers/namespace.ts";
import { startForFile } from "../../helpers/test-server.ts";

const env = startForFile(() => startTestEnv({ controllers: false }));

const TEMPLATE = `
    metadata:
      labels: {app: x}
    spec:
      containers:
      - {name: c, image: demo:1}`;

const MANIFEST = (pv: string) => `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds}
spec:
  selector: {matchLabels: {app: x}}
  template:${TEMPLATE}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  serviceName: sts
  selector: {matchLabels: {app: x}}
  template:${TEMPLATE}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  replicas: 2
  template:${TEMPLATE}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cj}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: c, image: demo:1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: ${pv}}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/${pv}}
`;

describe("kinds served without a loop", () => {
  let k: Kubectl;
  let ns: string;
  const pv = `pv-${Math.random().toString(36).slice(2, 8)}`;
  beforeAll(async () => {
    k = new Kubectl(env.kubeconfigPath);
    ns = await freshNamespace(env.client);
  });
  afterAll(async () => {
    await k?.close();
  });

  it("are applied, defaulted and listed as kubectl lists them", async () => {
    const out = await k.ok(["apply", "-n", ns, "-f", "-"], { input: MANIFEST(pv) });
    expect(out).toBe(
      "daemonset.apps/ds created\nstatefulset.apps/sts created\n" +
        "replicationcontroller/rc created\ncronjob.batch/cj created\n" +
        `persistentvolumeclaim/data created\npersistentvolume/${pv} created\n`,
    );
    const get = <T extends KubeObject>(
      apiVersion: string,
      kind: string,
      name: string,
      n?: string,
    ) => env.client.get<T>({ apiVersion, kind }, name, n);
    const ds = (await get("apps/v1", "DaemonSet", "ds", ns)) as KubeObject & { spec: unknown };
    expect(ds.spec).toMatchObject({
      revisionHistoryLimit: 10,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      template: { spec: { restartPolicy: "Always", dnsPolicy: "ClusterFirst" } },
    });
    const sts = (await get("apps/v1", "StatefulSet", "sts", ns)) as KubeObject & { spec: unknown };
    expect(sts.spec).toMatchObject({
      replicas: 1,
      podManagementPolicy: "OrderedReady",
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
    });
    const rc = (await get("v1", "ReplicationController", "rc", ns)) as KubeObject & {
      spec: { selector?: unknown };
    };
    expect(rc.spec.selector).toEqual({ app: "x" });
    expect(rc.metadata.labels).toEqual({ app: "x" });
    const cj = (await get("batch/v1", "CronJob", "cj", ns)) as KubeObject & { spec: unknown };
    expect(cj.spec).toMatchObject({
      concurrencyPolicy: "Allow",
      suspend: false,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
    });
    const pvc = (await get("v1", "PersistentVolumeClaim", "data", ns)) as KubeObject & {
      spec: unknown;
      status?: unknown;
    };
    expect(pvc.spec).toMatchObject({ volumeMode: "Filesystem" });
    expect(pvc.status).toEqual({ phase: "Pending" });
    const vol = (await get("v1", "PersistentVolume", pv)) as KubeObject & { spec: unknown };
    expect(vol.spec).toMatchObject({ persistentVolumeReclaimPolicy: "Retain" });

    const lines = (await k.ok(["get", "-n", ns, "ds,sts,rc,cj,pvc"])).split("\n");
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE$/,
      ),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^statefulset\.apps\/sts\s+0\/1\s+\d+s$/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^replicationcontroller\/rc\s+2\s+0\s+0\s+\d+s$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^cronjob\.batch\/cj\s+\*\/5 \* \* \* \*\s+<none>\s+False\s+0\s+<none>\s+\d+s$/,
      ),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^persistentvolumeclaim\/data\s+Pending\s+<unset>\s+\d+s$/),
    );
    const pvLine = (await k.ok(["get", "pv", pv])).split("\n")[1];
    expect(pvLine).toMatch(
      new RegExp(`^${pv}\\s+1Gi\\s+RWO\\s+Retain\\s+Pending\\s+<unset>\\s+\\d+s$`),
    );
    await k.ok(["delete", "pv", pv]);
  });
});
