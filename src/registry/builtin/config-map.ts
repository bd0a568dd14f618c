/** core/v1 ConfigMap. */
import type { KubeObject, StatusCause } from "@setpoint/api";
import type { ResourceDefinition } from "../types.ts";
import { bool, bytesMap, stringMap } from "./build.ts";
import {
  base64Length,
  dataKeyCauses,
  deepEqual,
  forbidden,
  invalid,
  isBase64,
  tooLong,
} from "./causes.ts";
import { kindSchema } from "./meta-schemas.ts";
import { CORE_V1 } from "./references.ts";

/** Largest total size of a ConfigMap's or Secret's data (Kubernetes' MaxSecretSize): 1 MiB. */
export const MAX_DATA_SIZE = 1024 * 1024;

export const configMapSchema = kindSchema(
  `${CORE_V1}.ConfigMap`,
  "ConfigMap holds configuration data for pods to consume.",
  {
    binaryData: bytesMap(
      "BinaryData contains the binary data, base64-encoded. Each key must consist of alphanumeric characters, '-', '_' or '.'. Keys must not overlap with those in data.",
    ),
    data: stringMap(
      "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use binaryData. Keys must not overlap with those in binaryData.",
    ),
    immutable: bool(
      "Immutable, if set to true, ensures that the data cannot be updated (only metadata can be modified). If not set to true, the field can be modified at any time.",
    ),
  },
);

function stringRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function validateConfigMap(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const data = stringRecord(obj.data);
  const binary = stringRecord(obj.binaryData);
  const causes = [...dataKeyCauses("data", data), ...dataKeyCauses("binaryData", binary)];
  let size = 0;
  for (const [key, value] of Object.entries(data ?? {})) {
    if (binary && Object.hasOwn(binary, key)) {
      causes.push(invalid(`data[${key}]`, key, "duplicate of key present in binaryData"));
    }
    if (typeof value === "string") size += Buffer.byteLength(value, "utf8");
  }
  for (const [key, value] of Object.entries(binary ?? {})) {
    if (typeof value !== "string" || !isBase64(value)) {
      causes.push(
        invalid(`binaryData[${key}]`, "<binary data>", "a valid base64 string is required"),
      );
      continue;
    }
    size += base64Length(value);
  }
  if (size > MAX_DATA_SIZE) causes.push(tooLong("", MAX_DATA_SIZE));
  if (old?.immutable === true)
    causes.push(...immutableDataCauses(obj, old, ["data", "binaryData"]));
  return causes;
}

/** Causes for changing a ConfigMap's or Secret's data once `immutable` was set. */
export function immutableDataCauses(
  obj: KubeObject,
  old: KubeObject,
  fields: string[],
): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const f of fields) {
    if (!deepEqual(obj[f] ?? {}, old[f] ?? {})) {
      causes.push(forbidden(f, "field is immutable when `immutable` is set"));
    }
  }
  if (obj.immutable !== true) {
    causes.push(forbidden("immutable", "field is immutable when `immutable` is set"));
  }
  return causes;
}

function count(v: unknown): number {
  const r = stringRecord(v);
  return r ? Object.keys(r).length : 0;
}

export const configMapDefinition: ResourceDefinition = {
  group: "",
  names: {
    plural: "configmaps",
    singular: "configmap",
    kind: "ConfigMap",
    listKind: "ConfigMapList",
    shortNames: ["cm"],
    categories: [],
  },
  namespaced: true,
  custom: false,
  strategicMergePatch: true,
  protobufMessage: "k8s.io.api.core.v1.ConfigMap",
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: configMapSchema,
      statusSubresource: false,
      printerColumns: [
        {
          name: "Data",
          type: "integer",
          priority: 0,
          description: "Number of keys in data and binaryData.",
          value: (obj) => count(obj.data) + count(obj.binaryData),
        },
      ],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    tracksGeneration: false,
    validate: validateConfigMap,
  },
};
