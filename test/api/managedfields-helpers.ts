/**
 * A Deployment-like schema with every list and map kind, and a tiny in-memory
 * "server" holding one object, that calls the field manager the way the apiserver
 * does and stamps uid/resourceVersion/creationTimestamp like storage.
 */

import type { KubeObject, ManagedFieldsEntry, Schema } from "@setpoint/api";
import { applyServerSide, FieldSet, updateManagedFields } from "@setpoint/api/managedfields";

export const API_VERSION = "example.com/v1";

const str: Schema = { type: "string" };

export const schema: Schema = {
  type: "object",
  properties: {
    spec: {
      type: "object",
      properties: {
        replicas: { type: "integer" },
        paused: { type: "boolean" },
        selector: {
          type: "object",
          "x-kubernetes-map-type": "atomic",
          properties: { matchLabels: { type: "object", additionalProperties: str } },
        },
        args: { type: "array", items: str },
        tolerations: {
          type: "array",
          "x-kubernetes-list-type": "atomic",
          items: { type: "object", properties: { key: str } },
        },
        hosts: { type: "array", items: str, "x-kubernetes-list-type": "set" },
        ports: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["port", "protocol"],
          items: {
            type: "object",
            properties: {
              port: { type: "integer" },
              protocol: { type: "string", default: "TCP" },
              name: str,
            },
          },
        },
        containers: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["name"],
          items: {
            type: "object",
            properties: {
              name: str,
              image: str,
              env: {
                type: "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                items: { type: "object", properties: { name: str, value: str } },
              },
            },
          },
        },
        resources: {
          type: "object",
          additionalProperties: { type: "object", properties: { cpu: str, memory: str } },
        },
        config: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
      },
    },
    status: {
      type: "object",
      properties: {
        ready: { type: "integer" },
        phase: str,
        conditions: {
          type: "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["type"],
          items: { type: "object", properties: { type: str, status: str } },
        },
      },
    },
  },
};

/** An applied configuration of the test kind named "web". */
export function config(
  rest: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: "Widget",
    metadata: { name: "web", namespace: "default", ...metadata },
    ...rest,
  };
}

/** Seconds after a fixed instant, as RFC 3339. */
export function at(seconds: number): string {
  return new Date(Date.UTC(2024, 0, 1, 0, 0, seconds)).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export interface WriteOptions {
  force?: boolean;
  subresource?: string;
  apiVersion?: string;
}

/** One stored object and the writes the apiserver would make to it. */
export class Server {
  obj: KubeObject | undefined;
  private clock = 0;
  private rv = 0;

  constructor(readonly typeSchema: Schema = schema) {}

  /** Time of the next write. */
  now(): string {
    this.clock += 1;
    return at(this.clock);
  }

  private store(next: KubeObject): KubeObject {
    const stored = structuredClone(next);
    stored.metadata.uid = this.obj?.metadata.uid ?? "uid-1";
    stored.metadata.creationTimestamp = this.obj?.metadata.creationTimestamp ?? at(0);
    this.rv += 1;
    stored.metadata.resourceVersion = String(this.rv);
    this.obj = stored;
    return stored;
  }

  /** Server-side apply; returns the stored object (unchanged: no new resourceVersion). */
  apply(cfg: KubeObject, manager: string, o: WriteOptions = {}): KubeObject {
    const out = applyServerSide(this.obj, cfg, this.typeSchema, {
      manager,
      apiVersion: o.apiVersion ?? API_VERSION,
      subresource: o.subresource,
      time: this.now(),
      force: o.force ?? false,
    });
    if (this.obj && JSON.stringify(out) === JSON.stringify(this.obj)) return this.obj;
    return this.store(out);
  }

  /** A non-apply write: `change` edits a copy of the stored object (or builds one on create). */
  update(
    manager: string,
    change: (o: KubeObject | undefined) => KubeObject,
    o: WriteOptions = {},
  ): KubeObject {
    const next = change(this.obj && structuredClone(this.obj));
    const mf = updateManagedFields(this.obj, next, this.typeSchema, {
      manager,
      apiVersion: o.apiVersion ?? API_VERSION,
      subresource: o.subresource,
      time: this.now(),
    });
    if (mf.length > 0) next.metadata.managedFields = mf;
    else delete next.metadata.managedFields;
    return this.store(next);
  }

  entries(): ManagedFieldsEntry[] {
    return this.obj?.metadata.managedFields ?? [];
  }

  /** The entry of a manager (and operation / subresource). */
  entry(
    manager: string,
    operation?: "Apply" | "Update",
    subresource?: string,
  ): ManagedFieldsEntry | undefined {
    return this.entries().find(
      (e) =>
        e.manager === manager &&
        (operation === undefined || e.operation === operation) &&
        (subresource === undefined || e.subresource === subresource),
    );
  }

  /** The fields a manager owns, as printed paths (".spec.replicas"). */
  owned(manager: string, operation?: "Apply" | "Update", subresource?: string): string[] {
    const e = this.entry(manager, operation, subresource);
    return e ? paths(e.fieldsV1 ?? {}) : [];
  }
}

/** The printed paths of a FieldsV1 document. */
export function paths(fields: unknown): string[] {
  return FieldSet.fromFieldsV1(fields)
    .paths()
    .map((p) => p.map(print).join(""));
}

function print(k: string): string {
  return k.startsWith("f:") ? `.${k.slice(2)}` : `[${k}]`;
}

/** The spec of an object, typed loosely for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test convenience
export function spec(o: KubeObject | undefined): any {
  return o?.spec;
}
