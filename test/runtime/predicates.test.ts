import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import {
  and,
  annotationChanged,
  evaluate,
  generationChanged,
  labelChanged,
  matching,
  not,
  or,
  type Predicate,
  passes,
  resourceVersionChanged,
} from "../../packages/runtime/src/controller/predicates.ts";

function obj(meta: Partial<KubeObject["metadata"]> = {}): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", ...meta } };
}

describe("predicates", () => {
  it("generationChanged skips status-only updates but passes creates and deletes", () => {
    const p = generationChanged();
    const a = obj({ generation: 1, resourceVersion: "1" });
    const statusOnly = obj({ generation: 1, resourceVersion: "2" });
    const spec = obj({ generation: 2, resourceVersion: "3" });
    expect(evaluate(p, "update", statusOnly, a)).toBe(false);
    expect(evaluate(p, "update", spec, a)).toBe(true);
    expect(evaluate(p, "create", a)).toBe(true);
    expect(evaluate(p, "delete", a)).toBe(true);
  });

  it("labelChanged and annotationChanged compare maps, absent equal to empty", () => {
    const none = obj();
    const empty = obj({ labels: {}, annotations: {} });
    const l = obj({ labels: { a: "1" } });
    const an = obj({ annotations: { a: "1" } });
    expect(evaluate(labelChanged(), "update", empty, none)).toBe(false);
    expect(evaluate(labelChanged(), "update", l, none)).toBe(true);
    expect(evaluate(labelChanged(), "update", an, none)).toBe(false);
    expect(evaluate(annotationChanged(), "update", an, none)).toBe(true);
    expect(evaluate(annotationChanged(), "update", empty, none)).toBe(false);
  });

  it("resourceVersionChanged filters resyncs", () => {
    const a = obj({ resourceVersion: "5" });
    expect(evaluate(resourceVersionChanged(), "update", a, a)).toBe(false);
    expect(evaluate(resourceVersionChanged(), "update", obj({ resourceVersion: "6" }), a)).toBe(
      true,
    );
  });

  it("matching applies to every event kind", () => {
    const p = matching((o) => o.metadata.labels?.team === "x");
    const yes = obj({ labels: { team: "x" } });
    const no = obj();
    for (const kind of ["create", "delete", "generic"] as const) {
      expect(evaluate(p, kind, yes)).toBe(true);
      expect(evaluate(p, kind, no)).toBe(false);
    }
    expect(evaluate(p, "update", yes, no)).toBe(true);
    expect(evaluate(p, "update", no, yes)).toBe(false);
  });

  it("and/or/not follow boolean logic on every event kind", () => {
    const constant = (v: boolean): Predicate => ({
      create: () => v,
      update: () => v,
      delete: () => v,
      generic: () => v,
    });
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { maxLength: 5 }),
        fc.constantFrom(
          "create" as const,
          "update" as const,
          "delete" as const,
          "generic" as const,
        ),
        (vals, kind) => {
          const ps = vals.map(constant);
          const o = obj();
          expect(evaluate(and(...ps), kind, o, o)).toBe(vals.every(Boolean));
          expect(evaluate(or(...ps), kind, o, o)).toBe(vals.some(Boolean));
          expect(evaluate(not(and(...ps)), kind, o, o)).toBe(!vals.every(Boolean));
          expect(passes(ps, kind, o, o)).toBe(vals.every(Boolean));
        },
      ),
    );
  });

  it("a predicate without a method for an event passes it, also through not", () => {
    const p = generationChanged();
    const a = obj({ generation: 1 });
    expect(evaluate(not(p), "create", a)).toBe(false);
    expect(evaluate(or(p, not(p)), "update", a, a)).toBe(true);
  });
});
