/** core/v1 Secret. */
import type { KubeObject, StatusCause } from "@setpoint/api";
import type { ResourceDefinition } from "../types.ts";
import { bool, bytesMap, fieldString, str, stringMap } from "./build.ts";
import {
  base64Length,
  dataKeyCauses,
  immutable,
  invalid,
  isBase64,
  required,
  tooLong,
} from "./causes.ts";
import { immutableDataCauses, MAX_DATA_SIZE } from "./config-map.ts";
import { kindSchema } from "./meta-schemas.ts";
import { CORE_V1 } from "./references.ts";

/** The default Secret type. */
export const SECRET_TYPE_OPAQUE = "Opaque";

export const secretSchema = kindSchema(
  `${CORE_V1}.Secret`,
  "Secret holds secret data of a certain type. The total bytes of the values in the data field must be less than 1 MiB.",
  {
    data: bytesMap(
      "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values are base64-encoded in JSON and may hold arbitrary bytes.",
    ),
    immutable: bool(
      "Immutable, if set to true, ensures that the data cannot be updated (only metadata can be modified). If not set to true, the field can be modified at any time.",
    ),
    stringData: stringMap(
      "stringData allows specifying non-binary secret data in string form. It is a write-only convenience: its keys and values are merged into data on write, overwriting existing values, and it is never output when reading.",
    ),
    type: str(
      'Used to facilitate programmatic handling of secret data: "Opaque" (the default), "kubernetes.io/tls", "kubernetes.io/basic-auth", "kubernetes.io/ssh-auth", "kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg", "kubernetes.io/service-account-token", "bootstrap.kubernetes.io/token", or any other value.',
    ),
  },
);

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

/**
 * Merges `stringData` into `data` (base64) and drops it; defaults `type` to Opaque.
 * Idempotent, so it is safe on every write.
 */
function defaultSecret(obj: KubeObject): void {
  const stringData = record(obj.stringData);
  if (stringData) {
    const data: Record<string, unknown> = { ...(record(obj.data) ?? {}) };
    for (const [k, v] of Object.entries(stringData)) {
      data[k] = Buffer.from(typeof v === "string" ? v : String(v ?? ""), "utf8").toString("base64");
    }
    obj.data = data;
  }
  if ("stringData" in obj) delete obj.stringData;
  if (typeof obj.type !== "string" || obj.type === "") obj.type = SECRET_TYPE_OPAQUE;
}

/** Keys a Secret of a given type must carry (at least one of, for basic-auth). */
function typeCauses(obj: KubeObject, data: Record<string, unknown>): StatusCause[] {
  const type = fieldString(obj, "type");
  const has = (k: string) => Object.hasOwn(data, k);
  const json = (k: string): StatusCause[] => {
    if (!has(k)) return [required(`data[${k}]`)];
    try {
      JSON.parse(Buffer.from(String(data[k]), "base64").toString("utf8"));
      return [];
    } catch (e) {
      return [invalid(`data[${k}]`, "<secret contents redacted>", (e as Error).message)];
    }
  };
  switch (type) {
    case "kubernetes.io/service-account-token": {
      const name = obj.metadata.annotations?.["kubernetes.io/service-account.name"];
      return name ? [] : [required("metadata.annotations[kubernetes.io/service-account.name]")];
    }
    case "kubernetes.io/dockercfg":
      return json(".dockercfg");
    case "kubernetes.io/dockerconfigjson":
      return json(".dockerconfigjson");
    case "kubernetes.io/basic-auth":
      return has("username") || has("password")
        ? []
        : [required("data[username]"), required("data[password]")];
    case "kubernetes.io/ssh-auth":
      return has("ssh-privatekey") ? [] : [required("data[ssh-privatekey]")];
    case "kubernetes.io/tls": {
      const c: StatusCause[] = [];
      if (!has("tls.key")) c.push(required("data[tls.key]"));
      if (!has("tls.crt")) c.push(required("data[tls.crt]"));
      return c;
    }
    default:
      return [];
  }
}

function validateSecret(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const data = record(obj.data) ?? {};
  const causes = dataKeyCauses("data", data);
  let size = 0;
  for (const [key, value] of Object.entries(data)) {
    if (typeof value !== "string" || !isBase64(value)) {
      causes.push(
        invalid(`data[${key}]`, "<secret contents redacted>", "a valid base64 string is required"),
      );
      continue;
    }
    size += base64Length(value);
  }
  if (size > MAX_DATA_SIZE) causes.push(tooLong("data", MAX_DATA_SIZE));
  causes.push(...typeCauses(obj, data));
  if (old) {
    causes.push(...immutable("type", obj.type, old.type ?? SECRET_TYPE_OPAQUE));
    if (old.immutable === true) causes.push(...immutableDataCauses(obj, old, ["data"]));
  }
  return causes;
}

function count(v: unknown): number {
  const r = record(v);
  return r ? Object.keys(r).length : 0;
}

export const secretDefinition: ResourceDefinition = {
  group: "",
  names: {
    plural: "secrets",
    singular: "secret",
    kind: "Secret",
    listKind: "SecretList",
    shortNames: [],
    categories: [],
  },
  namespaced: true,
  custom: false,
  strategicMergePatch: true,
  protobufMessage: "k8s.io.api.core.v1.Secret",
  versions: [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: secretSchema,
      statusSubresource: false,
      printerColumns: [
        {
          name: "Type",
          type: "string",
          priority: 0,
          description: "Used to facilitate programmatic handling of secret data.",
          value: (obj) => fieldString(obj, "type"),
        },
        {
          name: "Data",
          type: "integer",
          priority: 0,
          description: "Number of keys in data.",
          value: (obj) => count(obj.data),
        },
      ],
    },
  ],
  strategy: {
    allowUnconditionalUpdate: true,
    tracksGeneration: false,
    default: defaultSecret,
    validate: validateSecret,
    selectableFields: { type: (obj) => fieldString(obj, "type") },
  },
};
