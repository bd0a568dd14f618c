/**
 * The agent's Node as the kubelet registers it: labels (hostname, os, arch),
 * capacity and allocatable read from the machine (cpu, memory, pods,
 * ephemeral-storage), addresses (InternalIP, Hostname), the agent's endpoint in
 * `daemonEndpoints`, node info, and the MemoryPressure, DiskPressure, PIDPressure
 * and Ready conditions with the kubelet's reasons and messages.
 */
import { statfsSync } from "node:fs";
import { arch, availableParallelism, hostname, release, totalmem } from "node:os";
import type { Node, NodeCondition, NodeStatus } from "@setpoint/api";

/** Pods a node takes (the kubelet's default maxPods). */
export const MAX_PODS = 110;

export interface NodeIdentity {
  name: string;
  /** The address reported as InternalIP (and hostIP of its Pods). */
  address: string;
  /** The port of the agent's own endpoint (daemonEndpoints.kubeletEndpoint). */
  port: number;
  /** What runs the Pods, as nodeInfo.containerRuntimeVersion. */
  runtimeVersion: string;
  /** The Kubernetes version reported as nodeInfo.kubeletVersion. */
  kubeletVersion: string;
  /** Directory whose file system is the node's ephemeral storage. */
  dataDir: string;
}

/** The machine's resources, as numbers: cores, bytes, bytes. */
export function machineResources(dataDir: string): {
  cpu: number;
  memory: number;
  ephemeralStorage: number;
} {
  let storage = 0;
  try {
    const fs = statfsSync(dataDir);
    storage = fs.blocks * fs.bsize;
  } catch {}
  return { cpu: availableParallelism(), memory: totalmem(), ephemeralStorage: storage };
}

function goArch(): string {
  const a = arch();
  return a === "x64" ? "amd64" : a === "ia32" ? "386" : a;
}

/** The Node object the agent creates (status included). */
export function nodeObject(id: NodeIdentity): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: id.name,
      labels: {
        "beta.kubernetes.io/arch": goArch(),
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": goArch(),
        "kubernetes.io/hostname": id.name,
        "kubernetes.io/os": "linux",
      },
      annotations: { "node.alpha.kubernetes.io/ttl": "0" },
    },
    spec: {},
  };
}

type ConditionSpec = [type: string, status: string, reason: string, message: string];

const HEALTHY: ConditionSpec[] = [
  [
    "MemoryPressure",
    "False",
    "KubeletHasSufficientMemory",
    "kubelet has sufficient memory available",
  ],
  ["DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"],
  ["PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"],
  ["Ready", "True", "KubeletReady", "kubelet is posting ready status"],
];

/** Capacity and allocatable as quantities (cpu, memory, pods, ephemeral-storage). */
export type NodeResourceList = Record<string, string>;

/** The machine's resources as the kubelet reports them. */
export function machineResourceList(dataDir: string): NodeResourceList {
  const res = machineResources(dataDir);
  return {
    cpu: String(res.cpu),
    "ephemeral-storage": `${Math.floor(res.ephemeralStorage / 1024)}Ki`,
    memory: `${Math.floor(res.memory / 1024)}Ki`,
    pods: String(MAX_PODS),
  };
}

/**
 * The Node's status now; conditions keep their transition time from
 * `previous` when unchanged. `resources` default to this machine's.
 */
export function nodeStatus(
  id: NodeIdentity,
  now: string,
  previous?: NodeStatus,
  resources: NodeResourceList = machineResourceList(id.dataDir),
): NodeStatus {
  const conditions: NodeCondition[] = HEALTHY.map(([type, status, reason, message]) => {
    const prev = previous?.conditions?.find((c) => c.type === type);
    return {
      type,
      status,
      lastHeartbeatTime: now,
      lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : now,
      reason,
      message,
    };
  });
  return {
    capacity: resources,
    allocatable: resources,
    conditions,
    addresses: [
      { type: "InternalIP", address: id.address },
      { type: "Hostname", address: hostname() },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: id.port } },
    nodeInfo: {
      machineID: "",
      systemUUID: "",
      bootID: "",
      kernelVersion: release(),
      osImage: "Linux",
      containerRuntimeVersion: id.runtimeVersion,
      kubeletVersion: id.kubeletVersion,
      kubeProxyVersion: "",
      operatingSystem: "linux",
      architecture: goArch(),
    },
  };
}
