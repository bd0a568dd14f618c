/**
 * The garbage collector's decisions on a real ownership graph: what becomes of a
 * dependent given the state of its owners, and of an owner being deleted given
 * its dependents (the writes themselves are tested end to end in
 * garbage-collector.test.ts).
 */
import type { OwnerReference } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import {
  decideDependent,
  decideOwner,
  FINALIZER_FOREGROUND,
  FINALIZER_ORPHAN,
  Graph,
  type GraphNode,
  policyOf,
} from "../../src/controllers/garbagecollector/index.ts";

function node(
  uid: string,
  owners: OwnerReference[] = [],
  extra: Partial<GraphNode> = {},
): GraphNode {
  return {
    uid,
    apiVersion: "v1",
    group: "",
    kind: "ConfigMap",
    namespace: "ns",
    name: `n-${uid}`,
    resourceVersion: "1",
    owners,
    deleting: false,
    finalizers: [],
    resource: "configmaps",
    ...extra,
  };
}

function ref(uid: string, blockOwnerDeletion?: boolean): OwnerReference {
  const r: OwnerReference = { apiVersion: "v1", kind: "ConfigMap", name: `n-${uid}`, uid };
  if (blockOwnerDeletion !== undefined) r.blockOwnerDeletion = blockOwnerDeletion;
  return r;
}

describe("decideDependent", () => {
  it("keeps an object whose owners all exist", () => {
    const g = new Graph();
    const dep = node("d", [ref("a")]);
    expect(decideDependent(dep, { solid: [ref("a")], dangling: [], waiting: [] }, g)).toEqual({
      kind: "keep",
    });
  });

  it("drops dangling and waiting references when one owner exists", () => {
    const g = new Graph();
    const dep = node("d", [ref("a"), ref("b"), ref("c")]);
    const d = decideDependent(
      dep,
      { solid: [ref("a")], dangling: [ref("b")], waiting: [ref("c")] },
      g,
    );
    expect(d.kind).toBe("remove-references");
    if (d.kind === "remove-references") expect([...d.uids].sort()).toEqual(["b", "c"]);
  });

  it("deletes with the policy its own finalizers ask for when every owner is gone", () => {
    const g = new Graph();
    const plain = node("d", [ref("a")]);
    const orphaning = node("e", [ref("a")], { finalizers: [FINALIZER_ORPHAN] });
    const gone = { solid: [], dangling: [ref("a")], waiting: [] };
    expect(decideDependent(plain, gone, g)).toEqual({
      kind: "delete",
      policy: "Background",
      unblockFirst: false,
    });
    expect(decideDependent(orphaning, gone, g)).toEqual({
      kind: "delete",
      policy: "Orphan",
      unblockFirst: false,
    });
  });

  it("deletes in foreground when an owner waits and it has dependents, unblocking first in a cycle", () => {
    const g = new Graph();
    const dep = node("d", [ref("a", true)]);
    g.upsert(dep);
    const waiting = { solid: [], dangling: [], waiting: [ref("a", true)] };
    // No dependents of its own: the policy of its own finalizers.
    expect(decideDependent(dep, waiting, g)).toEqual({
      kind: "delete",
      policy: "Background",
      unblockFirst: false,
    });
    g.upsert(node("x", [ref("d")]));
    expect(decideDependent(dep, waiting, g)).toEqual({
      kind: "delete",
      policy: "Foreground",
      unblockFirst: false,
    });
    // A dependent of it that itself waits on its dependents: the references are unblocked first.
    g.upsert(node("x", [ref("d")], { deleting: true, finalizers: [FINALIZER_FOREGROUND] }));
    expect(decideDependent(dep, waiting, g)).toEqual({
      kind: "delete",
      policy: "Foreground",
      unblockFirst: true,
    });
  });
});

describe("decideOwner", () => {
  it("orphans every dependent of an owner deleted with orphan", () => {
    const g = new Graph();
    const owner = node("a", [], { deleting: true, finalizers: [FINALIZER_ORPHAN] });
    g.upsert(owner);
    g.upsert(node("d1", [ref("a")]));
    g.upsert(node("d2", [ref("a", true)]));
    const d = decideOwner(owner, g);
    expect(d.kind).toBe("orphan");
    if (d.kind === "orphan") expect(d.dependents.map((n) => n.uid).sort()).toEqual(["d1", "d2"]);
  });

  it("waits for blocking dependents in foreground, then removes the finalizer", () => {
    const g = new Graph();
    const owner = node("a", [], { deleting: true, finalizers: [FINALIZER_FOREGROUND] });
    g.upsert(owner);
    g.upsert(node("free", [ref("a", false)]));
    g.upsert(node("blocking", [ref("a", true)]));
    const d = decideOwner(owner, g);
    expect(d.kind).toBe("wait-for");
    if (d.kind === "wait-for") expect(d.blocking.map((n) => n.uid)).toEqual(["blocking"]);
    g.remove("blocking");
    expect(decideOwner(owner, g)).toEqual({
      kind: "remove-finalizer",
      finalizer: FINALIZER_FOREGROUND,
    });
  });

  it("leaves an object being deleted without either finalizer to its deletion", () => {
    const g = new Graph();
    const owner = node("a", [], { deleting: true, finalizers: ["example.com/other"] });
    expect(decideOwner(owner, g)).toEqual({ kind: "none" });
    expect(policyOf(node("b", [], { finalizers: [FINALIZER_FOREGROUND] }))).toBe("Foreground");
  });
});
