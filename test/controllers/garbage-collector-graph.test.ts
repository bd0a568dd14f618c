/**
 * The ownership graph's reverse edges stay exactly what the nodes' owner
 * references say, under any sequence of upserts and removals (fast-check).
 */

import type { OwnerReference } from "@setpoint/api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Graph, type GraphNode, sameOwners } from "../../src/controllers/garbagecollector/index.ts";

const UIDS = ["a", "b", "c", "d", "e", "f"];

function node(uid: string, owners: string[], resource = "configmaps"): GraphNode {
  return {
    uid,
    apiVersion: "v1",
    group: "",
    kind: "ConfigMap",
    namespace: "ns",
    name: `n-${uid}`,
    resourceVersion: "1",
    owners: owners.map((o) => ({ apiVersion: "v1", kind: "ConfigMap", name: `n-${o}`, uid: o })),
    deleting: false,
    finalizers: [],
    resource,
  };
}

type Op =
  | { kind: "upsert"; uid: string; owners: string[]; resource: string }
  | { kind: "remove"; uid: string };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("upsert" as const),
    uid: fc.constantFrom(...UIDS),
    owners: fc.uniqueArray(fc.constantFrom(...UIDS), { maxLength: 3 }),
    resource: fc.constantFrom("configmaps", "secrets"),
  }),
  fc.record({ kind: fc.constant("remove" as const), uid: fc.constantFrom(...UIDS) }),
);

describe("ownership graph", () => {
  it("keeps dependents and per-resource membership consistent with the nodes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const g = new Graph();
        const model = new Map<string, { owners: string[]; resource: string }>();
        for (const o of ops) {
          if (o.kind === "upsert") {
            g.upsert(node(o.uid, o.owners, o.resource));
            model.set(o.uid, { owners: o.owners, resource: o.resource });
          } else {
            const removed = g.remove(o.uid);
            expect(removed?.uid).toBe(model.has(o.uid) ? o.uid : undefined);
            model.delete(o.uid);
          }
        }
        expect(g.size).toBe(model.size);
        for (const owner of UIDS) {
          const want = [...model]
            .filter(([, v]) => v.owners.includes(owner))
            .map(([k]) => k)
            .sort();
          expect(
            g
              .dependentsOf(owner)
              .map((n) => n.uid)
              .sort(),
          ).toEqual(want);
          expect(g.hasDependents(owner)).toBe(want.length > 0);
        }
        for (const resource of ["configmaps", "secrets"]) {
          const want = [...model]
            .filter(([, v]) => v.resource === resource)
            .map(([k]) => k)
            .sort();
          expect(g.uidsOf(resource).sort()).toEqual(want);
        }
      }),
    );
  });

  it("compares owner lists reference by reference", () => {
    const r: OwnerReference = { apiVersion: "v1", kind: "ConfigMap", name: "a", uid: "1" };
    expect(sameOwners([r], [{ ...r }])).toBe(true);
    expect(sameOwners([r], [{ ...r, blockOwnerDeletion: true }])).toBe(false);
    expect(sameOwners([r], [{ ...r, blockOwnerDeletion: false }])).toBe(true);
    expect(sameOwners(undefined, [])).toBe(true);
    expect(sameOwners([r], [])).toBe(false);
  });
});
