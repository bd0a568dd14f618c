import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Condition, KubeObject } from "../../packages/api/src/meta.ts";
import { TerminalError } from "../../packages/runtime/src/controller/reconciler.ts";
import { mapLimit } from "../../packages/runtime/src/helpers/concurrency.ts";
import {
  findCondition,
  isConditionTrue,
  removeCondition,
  setCondition,
  setErrorCondition,
  setStatusCondition,
  type WithConditions,
} from "../../packages/runtime/src/helpers/conditions.ts";
import {
  addFinalizer,
  hasFinalizer,
  isBeingDeleted,
  removeFinalizer,
} from "../../packages/runtime/src/helpers/finalizers.ts";
import {
  AlreadyOwnedError,
  getControllerOf,
  isControlledBy,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "../../packages/runtime/src/helpers/owner-references.ts";

const t0 = new Date("2030-01-01T00:00:00Z");
const t1 = new Date("2030-01-01T01:00:00Z");

describe("conditions", () => {
  it("lastTransitionTime moves only when the status changes", () => {
    const conds: Condition[] = [];
    expect(setCondition(conds, { type: "Ready", status: "False", reason: "Waiting" }, t0)).toBe(
      true,
    );
    expect(conds[0].lastTransitionTime).toBe("2030-01-01T00:00:00Z");
    // Same status, new reason/message: updated, time kept.
    expect(
      setCondition(conds, { type: "Ready", status: "False", reason: "Still", message: "m" }, t1),
    ).toBe(true);
    expect(conds[0]).toMatchObject({
      reason: "Still",
      message: "m",
      lastTransitionTime: "2030-01-01T00:00:00Z",
    });
    // Identical: nothing changes.
    expect(
      setCondition(conds, { type: "Ready", status: "False", reason: "Still", message: "m" }, t1),
    ).toBe(false);
    // Status flips: time moves.
    expect(setCondition(conds, { type: "Ready", status: "True", reason: "Done" }, t1)).toBe(true);
    expect(conds[0].lastTransitionTime).toBe("2030-01-01T01:00:00Z");
    expect(conds).toHaveLength(1);
    expect(isConditionTrue(conds, "Ready")).toBe(true);
  });

  it("setting the same conditions twice is a no-op (property)", () => {
    const input = fc.record({
      type: fc.constantFrom("Ready", "Synced", "Degraded"),
      status: fc.constantFrom("True" as const, "False" as const, "Unknown" as const),
      reason: fc.constantFrom("A", "B"),
      message: fc.string({ maxLength: 5 }),
      observedGeneration: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(input, { maxLength: 10 }), (inputs) => {
        const conds: Condition[] = [];
        for (const i of inputs) setCondition(conds, i, t0);
        const snapshot = structuredClone(conds);
        for (const i of inputs.slice(-1)) expect(setCondition(conds, i, t1)).toBe(false);
        expect(conds).toEqual(snapshot);
        // One condition per type.
        expect(new Set(conds.map((c) => c.type)).size).toBe(conds.length);
      }),
    );
  });

  it("setStatusCondition stamps the object's generation", () => {
    const obj: WithConditions = {
      apiVersion: "v1",
      kind: "X",
      metadata: { name: "a", generation: 7 },
    };
    setStatusCondition(obj, { type: "Ready", status: "True", reason: "Ok" }, t0);
    expect(findCondition(obj.status?.conditions, "Ready")?.observedGeneration).toBe(7);
    obj.metadata.generation = 8;
    expect(setStatusCondition(obj, { type: "Ready", status: "True", reason: "Ok" }, t1)).toBe(true);
    expect(obj.status?.conditions?.[0]).toMatchObject({
      observedGeneration: 8,
      lastTransitionTime: "2030-01-01T00:00:00Z",
    });
  });

  it("setErrorCondition surfaces a terminal error with its reason", () => {
    const obj: WithConditions = {
      apiVersion: "v1",
      kind: "X",
      metadata: { name: "a", generation: 2 },
    };
    setErrorCondition(
      obj,
      new TerminalError("spec.size must be positive", { reason: "InvalidSpec" }),
      { now: t0 },
    );
    expect(obj.status?.conditions?.[0]).toEqual({
      type: "Ready",
      status: "False",
      reason: "InvalidSpec",
      message: "spec.size must be positive",
      observedGeneration: 2,
      lastTransitionTime: "2030-01-01T00:00:00Z",
    });
    expect(removeCondition(obj.status!.conditions!, "Ready")).toBe(true);
    expect(removeCondition(obj.status!.conditions!, "Ready")).toBe(false);
  });
});

describe("finalizers", () => {
  it("adds once and removes every occurrence", () => {
    const obj: KubeObject = { metadata: { name: "a", finalizers: ["other"] } };
    expect(addFinalizer(obj, "example.com/cleanup")).toBe(true);
    expect(addFinalizer(obj, "example.com/cleanup")).toBe(false);
    expect(obj.metadata.finalizers).toEqual(["other", "example.com/cleanup"]);
    expect(hasFinalizer(obj, "example.com/cleanup")).toBe(true);
    expect(removeFinalizer(obj, "example.com/cleanup")).toBe(true);
    expect(removeFinalizer(obj, "example.com/cleanup")).toBe(false);
    expect(obj.metadata.finalizers).toEqual(["other"]);
    expect(isBeingDeleted(obj)).toBe(false);
    obj.metadata.deletionTimestamp = "2030-01-01T00:00:00Z";
    expect(isBeingDeleted(obj)).toBe(true);
  });

  it("does not mutate a frozen input by accident: it throws instead", () => {
    const frozen = Object.freeze({ metadata: Object.freeze({ name: "a" }) }) as KubeObject;
    expect(() => addFinalizer(frozen, "x")).toThrow(TypeError);
  });
});

describe("owner references", () => {
  const owner: KubeObject = {
    apiVersion: "example.com/v1",
    kind: "ConfigMapSet",
    metadata: { name: "set", uid: "uid-1" },
  };
  const other: KubeObject = {
    apiVersion: "example.com/v1",
    kind: "ConfigMapSet",
    metadata: { name: "set2", uid: "uid-2" },
  };

  it("sets a controller reference by UID, idempotently", () => {
    const dep: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "ns" },
    };
    expect(setControllerReference(owner, dep)).toBe(true);
    expect(setControllerReference(owner, dep)).toBe(false);
    expect(dep.metadata.ownerReferences).toEqual([
      {
        apiVersion: "example.com/v1",
        kind: "ConfigMapSet",
        name: "set",
        uid: "uid-1",
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(isControlledBy(dep, owner)).toBe(true);
    expect(getControllerOf(dep)?.uid).toBe("uid-1");
  });

  it("refuses a second controller but allows plain owners", () => {
    const dep: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "ns" },
    };
    setControllerReference(owner, dep);
    expect(() => setControllerReference(other, dep)).toThrow(AlreadyOwnedError);
    expect(setOwnerReference(other, dep)).toBe(true);
    expect(dep.metadata.ownerReferences).toHaveLength(2);
    expect(isControlledBy(dep, other)).toBe(false);
    // Refreshing the controller as a plain owner keeps its controller flag.
    expect(setOwnerReference(owner, dep)).toBe(false);
    expect(removeOwnerReference(other, dep)).toBe(true);
    expect(dep.metadata.ownerReferences).toHaveLength(1);
  });

  it("a renamed owner with the same UID updates the reference; a recreated one (new UID) is refused", () => {
    const dep: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "ns" },
    };
    setControllerReference(owner, dep);
    const recreated = { ...owner, metadata: { ...owner.metadata, uid: "uid-9" } };
    expect(() => setControllerReference(recreated, dep)).toThrow(AlreadyOwnedError);
  });

  it("needs a UID and respects namespaces", () => {
    const dep: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "ns" },
    };
    const noUid: KubeObject = { apiVersion: "v1", kind: "X", metadata: { name: "x" } };
    expect(() => setControllerReference(noUid, dep)).toThrow(/uid/);
    const elsewhere: KubeObject = {
      apiVersion: "v1",
      kind: "X",
      metadata: { name: "x", uid: "u", namespace: "other" },
    };
    expect(() => setControllerReference(elsewhere, dep)).toThrow(/same namespace/);
  });
});

describe("mapLimit", () => {
  it("keeps at most `limit` calls in flight and the results in order, for any timing", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        async (delays, limit) => {
          let inFlight = 0;
          let most = 0;
          const out = await mapLimit(delays, limit, async (d, i) => {
            inFlight++;
            most = Math.max(most, inFlight);
            await new Promise((r) => setTimeout(r, d));
            inFlight--;
            return i * 2;
          });
          expect(out).toEqual(delays.map((_, i) => i * 2));
          expect(most).toBeLessThanOrEqual(limit);
          if (delays.length >= limit) expect(most).toBe(limit);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("attempts every item when some fail, then rejects with the first failure", async () => {
    const attempted: number[] = [];
    // Item 2 holds its slot until item 5 starts, and item 5 starts only once the
    // other slot has run 1, 3 and 4 (and 4's failure was recorded): so 4 fails
    // first by construction, with no timers involved.
    let releaseTwo!: () => void;
    const twoReleased = new Promise<void>((r) => {
      releaseTwo = r;
    });
    const err = await mapLimit([1, 2, 3, 4, 5], 2, async (n) => {
      attempted.push(n);
      if (n === 2) await twoReleased;
      if (n === 5) releaseTwo();
      if (n % 2 === 0) throw new Error(`failed ${n}`);
      return n;
    }).catch((e: unknown) => e);
    expect((err as Error).message).toBe("failed 4");
    expect(attempted).toEqual([1, 2, 3, 4, 5]);
  });
});
