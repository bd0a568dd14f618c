/**
 * core/v1 PersistentVolumeClaim and PersistentVolume: stored and served with
 * Kubernetes' defaults (volumeMode Filesystem, a volume's reclaim policy
 * Retain, phase Pending at creation), the status subresource, and the columns of
 * `kubectl get pvc,pv`. Nothing binds or provisions them yet; they are served
 * so that manifests and clients that name them (kubectl's default prune list
 * among them) work.
 */
import type { KubeObject } from "@setpoint/api";
import { field, fieldObject } from "../build.ts";
import { AGE_COLUMN } from "./columns.ts";
import { workloadDefinition } from "./define.ts";

type Obj = Record<string, unknown>;

/** What kubectl prints for a volume attributes class that is not set. */
const UNSET = "<unset>";

function setIfAbsent(o: Obj, key: string, value: unknown): void {
  if (o[key] === undefined) o[key] = value;
}

/** ReadWriteOnce → RWO, as kubectl prints access modes. */
function accessModes(o: KubeObject, ...path: string[]): string {
  const modes = field(o, ...path);
  if (!Array.isArray(modes) || modes.length === 0) return "";
  const short: Record<string, string> = {
    ReadWriteOnce: "RWO",
    ReadOnlyMany: "ROX",
    ReadWriteMany: "RWX",
    ReadWriteOncePod: "RWOP",
  };
  return modes.map((m) => short[String(m)] ?? String(m)).join(",");
}

function prepareCreate(obj: KubeObject): void {
  obj.status = { phase: "Pending" };
}

export const persistentVolumeClaimDefinition = workloadDefinition({
  group: "",
  kind: "PersistentVolumeClaim",
  plural: "persistentvolumeclaims",
  shortNames: ["pvc"],
  namespaced: true,
  status: true,
  generation: false,
  columns: [
    {
      name: "Status",
      type: "string",
      priority: 0,
      description: "The claim's phase.",
      value: (o) => String(field(o, "status", "phase") ?? ""),
    },
    {
      name: "Volume",
      type: "string",
      priority: 0,
      description: "The bound volume.",
      value: (o) => String(field(o, "spec", "volumeName") ?? ""),
    },
    {
      name: "Capacity",
      type: "string",
      priority: 0,
      description: "The bound volume's capacity.",
      value: (o) => String(field(o, "status", "capacity", "storage") ?? ""),
    },
    {
      name: "Access Modes",
      type: "string",
      priority: 0,
      description: "The bound volume's access modes.",
      value: (o) => accessModes(o, "status", "accessModes"),
    },
    {
      name: "StorageClass",
      type: "string",
      priority: 0,
      description: "The storage class.",
      value: (o) => String(field(o, "spec", "storageClassName") ?? ""),
    },
    {
      name: "VolumeAttributesClass",
      type: "string",
      priority: 0,
      description: "The volume attributes class.",
      value: (o) => String(field(o, "spec", "volumeAttributesClassName") || UNSET),
    },
    AGE_COLUMN,
    {
      name: "VolumeMode",
      type: "string",
      priority: 1,
      description: "Filesystem or Block.",
      value: (o) => String(field(o, "spec", "volumeMode") ?? ""),
    },
  ],
  strategy: {
    default: (obj) => {
      const spec = fieldObject(obj, "spec");
      if (spec) setIfAbsent(spec, "volumeMode", "Filesystem");
    },
    prepareForCreate: prepareCreate,
  },
});

export const persistentVolumeDefinition = workloadDefinition({
  group: "",
  kind: "PersistentVolume",
  plural: "persistentvolumes",
  shortNames: ["pv"],
  namespaced: false,
  status: true,
  generation: false,
  columns: [
    {
      name: "Capacity",
      type: "string",
      priority: 0,
      description: "The volume's capacity.",
      value: (o) => String(field(o, "spec", "capacity", "storage") ?? ""),
    },
    {
      name: "Access Modes",
      type: "string",
      priority: 0,
      description: "The volume's access modes.",
      value: (o) => accessModes(o, "spec", "accessModes"),
    },
    {
      name: "Reclaim Policy",
      type: "string",
      priority: 0,
      description: "What happens to the volume when its claim goes.",
      value: (o) => String(field(o, "spec", "persistentVolumeReclaimPolicy") ?? ""),
    },
    {
      name: "Status",
      type: "string",
      priority: 0,
      description: "The volume's phase.",
      value: (o) => String(field(o, "status", "phase") ?? ""),
    },
    {
      name: "Claim",
      type: "string",
      priority: 0,
      description: "The claim bound to it.",
      value: (o) => {
        const ns = field(o, "spec", "claimRef", "namespace");
        const name = field(o, "spec", "claimRef", "name");
        return name ? `${ns ?? ""}/${name}` : "";
      },
    },
    {
      name: "StorageClass",
      type: "string",
      priority: 0,
      description: "The storage class.",
      value: (o) => String(field(o, "spec", "storageClassName") ?? ""),
    },
    {
      name: "VolumeAttributesClass",
      type: "string",
      priority: 0,
      description: "The volume attributes class.",
      value: (o) => String(field(o, "spec", "volumeAttributesClassName") || UNSET),
    },
    {
      name: "Reason",
      type: "string",
      priority: 0,
      description: "Why the volume is in its phase.",
      value: (o) => String(field(o, "status", "reason") ?? ""),
    },
    AGE_COLUMN,
    {
      name: "VolumeMode",
      type: "string",
      priority: 1,
      description: "Filesystem or Block.",
      value: (o) => String(field(o, "spec", "volumeMode") ?? ""),
    },
  ],
  strategy: {
    default: (obj) => {
      const spec = fieldObject(obj, "spec");
      if (!spec) return;
      setIfAbsent(spec, "persistentVolumeReclaimPolicy", "Retain");
      setIfAbsent(spec, "volumeMode", "Filesystem");
    },
    prepareForCreate: prepareCreate,
  },
});
