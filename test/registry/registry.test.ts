import { describe, expect, it } from "vitest";
import {
  compareVersionPriority,
  createBuiltinRegistry,
  Registry,
  type ResourceDefinition,
} from "../../src/registry/index.ts";

function widget(
  versions: { name: string; served?: boolean; storage?: boolean }[],
): ResourceDefinition {
  return {
    group: "example.com",
    names: {
      plural: "widgets",
      singular: "widget",
      kind: "Widget",
      listKind: "WidgetList",
      shortNames: ["wd"],
      categories: ["all"],
    },
    namespaced: true,
    custom: true,
    typed: false,
    strategy: { allowUnconditionalUpdate: false, tracksGeneration: true },
    versions: versions.map((v) => ({
      name: v.name,
      served: v.served ?? true,
      storage: v.storage ?? false,
      schema: { type: "object" },
      statusSubresource: true,
      printerColumns: [],
    })),
  };
}

describe("compareVersionPriority", () => {
  it("orders like Kubernetes: GA, beta, alpha, then others alphabetically", () => {
    const input = [
      "v1alpha1",
      "foo10",
      "v11alpha2",
      "v2",
      "v1",
      "v10beta3",
      "v11beta2",
      "foo1",
      "v12alpha1",
      "v3beta1",
      "v10",
    ];
    expect([...input].sort(compareVersionPriority)).toEqual([
      "v10",
      "v2",
      "v1",
      "v11beta2",
      "v10beta3",
      "v3beta1",
      "v12alpha1",
      "v11alpha2",
      "v1alpha1",
      "foo1",
      "foo10",
    ]);
  });
});

describe("Registry", () => {
  it("registers every built-in type", () => {
    const reg = createBuiltinRegistry();
    const names = reg.all().map((d) => `${d.names.plural}.${d.group}`);
    expect(names.sort()).toEqual(
      [
        "configmaps.",
        "controllerrevisions.apps",
        "cronjobs.batch",
        "daemonsets.apps",
        "persistentvolumeclaims.",
        "persistentvolumes.",
        "replicationcontrollers.",
        "statefulsets.apps",
        "deployments.apps",
        "endpoints.",
        "endpointslices.discovery.k8s.io",
        "ingressclasses.networking.k8s.io",
        "ingresses.networking.k8s.io",
        "jobs.batch",
        "nodes.",
        "poddisruptionbudgets.policy",
        "clusterrolebindings.rbac.authorization.k8s.io",
        "clusterroles.rbac.authorization.k8s.io",
        "rolebindings.rbac.authorization.k8s.io",
        "roles.rbac.authorization.k8s.io",
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
        "validatingadmissionpolicies.admissionregistration.k8s.io",
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        "pods.",
        "podtemplates.",
        "replicasets.apps",
        "services.",
        "events.",
        "events.events.k8s.io",
        "leases.coordination.k8s.io",
        "namespaces.",
        "secrets.",
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
        "subjectaccessreviews.authorization.k8s.io",
        "localsubjectaccessreviews.authorization.k8s.io",
        "tokenreviews.authentication.k8s.io",
        "serviceaccounts.",
      ].sort(),
    );
    expect(reg.lookup("", "v1", "configmaps")?.def.names.kind).toBe("ConfigMap");
    expect(reg.lookup("coordination.k8s.io", "v1", "leases")?.version.name).toBe("v1");
    expect(reg.lookup("", "v2", "configmaps")).toBeUndefined();
    expect(reg.byKind("events.k8s.io", "Event")?.group).toBe("events.k8s.io");
    expect(reg.byKind("", "Event")?.group).toBe("");
    expect(reg.byKind("", "Lease")).toBeUndefined();
  });

  it("lists groups core first, built-ins in priority order, then custom groups", () => {
    const reg = createBuiltinRegistry();
    reg.add(widget([{ name: "v1beta1" }, { name: "v1", storage: true }, { name: "v2alpha1" }]));
    expect(reg.groups()).toEqual([
      { group: "", versions: ["v1"], preferred: "v1" },
      { group: "apps", versions: ["v1"], preferred: "v1" },
      { group: "events.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "authentication.k8s.io", versions: ["v1", "v1beta1", "v1alpha1"], preferred: "v1" },
      { group: "authorization.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "batch", versions: ["v1"], preferred: "v1" },
      { group: "networking.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "policy", versions: ["v1"], preferred: "v1" },
      { group: "rbac.authorization.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "admissionregistration.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "coordination.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "discovery.k8s.io", versions: ["v1"], preferred: "v1" },
      { group: "example.com", versions: ["v1", "v1beta1", "v2alpha1"], preferred: "v1" },
    ]);
  });

  it("hides unserved versions and replaces a definition with the same group and plural", () => {
    const reg = new Registry();
    reg.add(
      widget([
        { name: "v1", served: false },
        { name: "v1beta1", storage: true },
      ]),
    );
    expect(reg.lookup("example.com", "v1", "widgets")).toBeUndefined();
    expect(reg.lookup("example.com", "v1beta1", "widgets")).toBeDefined();
    expect(reg.groups()).toEqual([
      { group: "example.com", versions: ["v1beta1"], preferred: "v1beta1" },
    ]);
    reg.add(widget([{ name: "v1", storage: true }]));
    expect(reg.all()).toHaveLength(1);
    expect(reg.lookup("example.com", "v1", "widgets")).toBeDefined();
    expect(reg.lookup("example.com", "v1beta1", "widgets")).toBeUndefined();
  });

  it("bumps generation and notifies listeners on add and remove", () => {
    const reg = new Registry();
    let calls = 0;
    const off = reg.onChange(() => calls++);
    const g0 = reg.generation;
    reg.add(widget([{ name: "v1", storage: true }]));
    expect(reg.generation).toBe(g0 + 1);
    reg.remove("example.com", "widgets");
    expect(reg.generation).toBe(g0 + 2);
    reg.remove("example.com", "widgets");
    expect(reg.generation).toBe(g0 + 2);
    expect(calls).toBe(2);
    off();
    reg.add(widget([{ name: "v1", storage: true }]));
    expect(calls).toBe(2);
    expect(reg.get("example.com", "widgets")).toBeDefined();
  });

  it("refuses definitions without exactly one storage version", () => {
    const reg = new Registry();
    expect(() => reg.add(widget([{ name: "v1" }]))).toThrow(/storage version/);
    expect(() =>
      reg.add(
        widget([
          { name: "v1", storage: true },
          { name: "v2", storage: true },
        ]),
      ),
    ).toThrow(/storage version/);
    expect(() => reg.add(widget([]))).toThrow(/no versions/);
    expect(reg.generation).toBe(0);
  });
});
