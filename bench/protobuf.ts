/**
 * Kubernetes protobuf benchmark: `npm run bench:protobuf`.
 *
 * What answering and reading protobuf costs beside JSON, in one process:
 *
 * - encode pod: a running Pod (spec, status, conditions, managed fields) encoded
 *   as its protobuf answer, beside JSON.stringify of the same object;
 * - encode list: a PodList of 500 such Pods, beside JSON.stringify;
 * - decode deployment: the protobuf body kubectl sends for `create deployment`,
 *   decoded to its JSON form, beside JSON.parse of that JSON's text.
 *
 * Sizes (bytes) of each encoding are printed too.
 *
 * Environment:
 *   BENCH_PROTOBUF_MS   time per measurement in ms (default 1000)
 */
import type { KubeObject } from "@setpoint/api";
import { decodeProtobufObject, encodeProtobufObject } from "../src/apiserver/wire/index.ts";
import { printTable, type Row } from "./lib/table.ts";
import { loopFor } from "./lib/timing.ts";

const MS = Number(process.env.BENCH_PROTOBUF_MS ?? 1000);

function pod(i: number): KubeObject {
  const t = "2026-01-02T03:04:05Z";
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `web-7957885594-${i}`,
      generateName: "web-7957885594-",
      namespace: "default",
      uid: `6a1f2c3e-0000-4000-8000-${String(i).padStart(12, "0")}`,
      resourceVersion: String(1000 + i),
      creationTimestamp: t,
      labels: { app: "web", "pod-template-hash": "7957885594" },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: "web-7957885594",
          uid: "0e1f2c3e-0000-4000-8000-000000000001",
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: "kube-controller-manager",
          operation: "Update",
          apiVersion: "v1",
          time: t,
          fieldsType: "FieldsV1",
          fieldsV1: { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } },
        },
      ],
    },
    spec: {
      containers: [
        {
          name: "nginx",
          image: "nginx:1.27",
          ports: [{ containerPort: 80, protocol: "TCP" }],
          resources: { limits: { cpu: "500m", memory: "256Mi" }, requests: { cpu: "100m" } },
          env: [{ name: "MODE", value: "production" }],
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "File",
          imagePullPolicy: "IfNotPresent",
        },
      ],
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
      serviceAccountName: "default",
      nodeName: `node-${i % 10}`,
      schedulerName: "default-scheduler",
      tolerations: [
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
      ],
      priority: 0,
      enableServiceLinks: true,
    },
    status: {
      phase: "Running",
      conditions: [
        { type: "Ready", status: "True", lastTransitionTime: t },
        { type: "PodScheduled", status: "True", lastTransitionTime: t },
      ],
      hostIP: "127.0.0.1",
      podIP: `127.1.0.${i % 250}`,
      startTime: t,
      containerStatuses: [
        {
          name: "nginx",
          ready: true,
          restartCount: 0,
          image: "nginx:1.27",
          imageID: "",
          started: true,
          state: { running: { startedAt: t } },
        },
      ],
      qosClass: "Burstable",
    },
  };
}

const one = pod(1);
const list = {
  apiVersion: "v1",
  kind: "PodList",
  metadata: { resourceVersion: "5000" },
  items: Array.from({ length: 500 }, (_, i) => pod(i)),
};
const deployment = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", labels: { app: "web" } },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "nginx", image: "nginx:1.27" }] },
    },
  },
};
const deploymentBody = encodeProtobufObject(deployment)!;
const deploymentJson = JSON.stringify(deployment);

const rows: Row[] = [];
let sink = 0;
function measure(name: string, op: () => number, baseline: () => number, label: string): void {
  loopFor(MS / 4, () => {
    sink += op() + baseline();
  });
  const base = loopFor(MS, () => {
    sink += baseline();
  });
  const r = loopFor(MS, () => {
    sink += op();
  });
  rows.push({
    backend: name,
    metric: "per second",
    value: r.perSecond,
    unit: "/s",
    baseline: base.perSecond,
    baselineLabel: label,
    better: "higher",
  });
}

measure(
  `encode pod (${encodeProtobufObject(one)!.length} B pb, ${JSON.stringify(one).length} B json)`,
  () => encodeProtobufObject(one)!.length,
  () => JSON.stringify(one).length,
  "JSON.stringify",
);
measure(
  `encode list of 500 (${encodeProtobufObject(list)!.length} B pb, ${JSON.stringify(list).length} B json)`,
  () => encodeProtobufObject(list)!.length,
  () => JSON.stringify(list).length,
  "JSON.stringify",
);
measure(
  `decode deployment (${deploymentBody.length} B pb)`,
  () => (decodeProtobufObject(deploymentBody).spec ? 1 : 0),
  () => (JSON.parse(deploymentJson).spec ? 1 : 0),
  "JSON.parse",
);
printTable("Kubernetes protobuf beside JSON (higher is better)", rows);
if (sink < 0) console.log(sink);
