import type { Schema } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import artifact from "../../src/registry/builtin/generated/workload-types.json" with {
  type: "json",
};
import { workloadSchema } from "../../src/registry/builtin/workloads/schemas.ts";
import { schemaDefinition } from "../../src/registry/definitions.ts";

function prop(s: Schema, ...path: string[]): Schema {
  let cur = s;
  for (const p of path) {
    const next = p === "[]" ? cur.items : cur.properties?.[p];
    if (!next) throw new Error(`no ${p} in ${JSON.stringify(Object.keys(cur.properties ?? {}))}`);
    cur = next;
  }
  return cur;
}

describe("workload schemas from the generated artifact", () => {
  it("describes every field of every generated struct (kubectl explain shows it)", () => {
    const missing: string[] = [];
    for (const name of Object.keys(artifact.definitions)) {
      const s = workloadSchema(name);
      for (const [field, f] of Object.entries(s.properties ?? {})) {
        if (!f.description) missing.push(`${name}.${field}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("builds every root kind as a named definition with apiVersion, kind and metadata", () => {
    for (const root of artifact.roots) {
      const s = workloadSchema(root);
      expect(schemaDefinition(s)?.name).toBe(root);
      expect(Object.keys(s.properties ?? {})).toEqual(
        expect.arrayContaining(["apiVersion", "kind", "metadata"]),
      );
    }
  });

  it("resolves deployment.spec.template.spec.containers with Kubernetes' markers", () => {
    const d = workloadSchema("io.k8s.api.apps.v1.Deployment");
    const containers = prop(d, "spec", "template", "spec", "containers");
    expect(containers["x-kubernetes-list-type"]).toBe("map");
    expect(containers["x-kubernetes-list-map-keys"]).toEqual(["name"]);
    expect(containers["x-kubernetes-patch-merge-key"]).toBe("name");
    expect(containers.items?.required).toContain("name");
    expect(prop(containers, "[]", "ports")["x-kubernetes-list-map-keys"]).toEqual([
      "containerPort",
      "protocol",
    ]);
    expect(prop(d, "spec", "replicas").format).toBe("int32");
    expect(
      prop(d, "spec", "strategy", "rollingUpdate", "maxSurge")["x-kubernetes-int-or-string"],
    ).toBe(true);
    expect(prop(d, "spec", "required" in d ? "selector" : "selector").properties).toHaveProperty(
      "matchLabels",
    );
    expect(schemaDefinition(prop(d, "spec", "template"))?.name).toBe(
      "io.k8s.api.core.v1.PodTemplateSpec",
    );
  });

  it("flattens inline structs (a volume's source fields are the volume's)", () => {
    const pod = workloadSchema("io.k8s.api.core.v1.Pod");
    const volume = prop(pod, "spec", "volumes", "[]");
    expect(volume.properties).toHaveProperty("emptyDir");
    expect(volume.properties).toHaveProperty("configMap");
    expect(volume.required).toEqual(["name"]);
  });

  it("keeps protobuf facts and no documentation text in the artifact", () => {
    const spec = artifact.definitions["io.k8s.api.apps.v1.DeploymentSpec"].fields;
    const replicas = spec.find((f) => f.name === "replicas");
    expect(replicas?.protobuf).toEqual({
      wire: "varint",
      number: 1,
      repeated: false,
      name: "replicas",
    });
    expect(JSON.stringify(artifact)).not.toContain("description");
  });
});
