/** The fault proxy's bookkeeping: which resource a path names, and which writes changed nothing. */
import { describe, expect, it } from "vitest";
import { type CommittedWrite, canonicalJson, resourceOf, seededRandom } from "./faults/proxy.ts";
import { auditWrites } from "./faults/writes.ts";

describe("resourceOf", () => {
  it.each([
    ["POST", "/api/v1/namespaces/a/configmaps", "configmaps"],
    ["PUT", "/api/v1/namespaces/a/configmaps/x", "configmaps"],
    ["PUT", "/api/v1/namespaces/a", "namespaces"],
    ["POST", "/api/v1/namespaces", "namespaces"],
    ["PUT", "/apis/examples.setpoint.dev/v1alpha1/configmapsets/s/status", "configmapsets"],
    ["DELETE", "/apis/apps/v1/namespaces/a/deployments/d", "deployments"],
  ])("%s %s", (method, path, want) => {
    expect(resourceOf(method, path)).toBe(want);
  });
});

describe("auditWrites", () => {
  const w = (
    rv: string,
    content: string,
    subject: boolean,
    extra: Partial<CommittedWrite> = {},
  ): CommittedWrite => ({
    subject,
    method: "PUT",
    path: "/api/v1/namespaces/a/configmaps/x",
    resource: "configmaps",
    uid: "u1",
    resourceVersion: rv,
    content,
    answerLost: false,
    ...extra,
  });

  it("flags a subject write that left the object as the write before it did", () => {
    const audit = auditWrites(
      [w("3", "B", true), w("1", "A", false), w("2", "B", true), w("4", "C", false)],
      ["configmaps"],
    );
    expect(audit.redundant.get("u1")?.map((r) => r.write.resourceVersion)).toEqual(["3"]);
    expect(audit.byVerb).toEqual({ "PUT configmaps": 2 });
  });

  it("does not flag putting back what someone else changed", () => {
    const audit = auditWrites(
      [w("1", "A", true), w("2", "B", false), w("3", "A", true)],
      ["configmaps"],
    );
    expect(audit.redundant.size).toBe(0);
  });

  it("orders an object's delete last and counts lost answers", () => {
    const audit = auditWrites(
      [
        w("", "(deleted)", true, { method: "DELETE", answerLost: true }),
        w("1", "A", true, { answerLost: true }),
      ],
      ["configmaps"],
    );
    expect(audit.redundant.size).toBe(0);
    expect(audit.answerLost.get("u1")).toBe(2);
  });
});

describe("helpers", () => {
  it("canonicalJson ignores key order and undefined members", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: undefined } })).toBe(
      canonicalJson({ a: { d: [1, { x: 1, y: 2 }] }, b: 1 }),
    );
  });

  it("seededRandom repeats its sequence for a seed and differs across seeds", () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const c = seededRandom(8);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(Array.from({ length: 5 }, () => c())).not.toEqual(xs);
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
  });
});
