/** createOrUpdate and updateStatusIfChanged against a real apiserver, counting writes. */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { Client } from "../../packages/runtime/src/client/client.ts";
import { isConflict } from "../../packages/runtime/src/client/errors.ts";
import { createOrUpdate } from "../../packages/runtime/src/helpers/create-or-update.ts";
import { updateStatusIfChanged } from "../../packages/runtime/src/helpers/status.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

type ConfigMap = KubeObject & { data?: Record<string, string> };
type Namespace = KubeObject & {
  status?: { phase?: string; conditions?: unknown[]; extra?: string };
};
const CM = { apiVersion: "v1", kind: "ConfigMap" };

const env = startForFile(startTestServer);

function writes(c: Client): number {
  const v = c.stats.byVerb;
  return (v.create ?? 0) + (v.update ?? 0) + (v.patch ?? 0);
}

describe("createOrUpdate", () => {
  it("creates, updates only the controller's fields, and does not write when nothing changed", async () => {
    const c = new Client({ server: env.url });
    try {
      const skeleton: ConfigMap = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "cou", namespace: "default" },
      };
      const mutate = (o: ConfigMap) => {
        o.data = { ...o.data, owned: "v1" };
      };
      const r1 = await createOrUpdate(c, skeleton, mutate);
      expect(r1.result).toBe("created");
      expect(writes(c)).toBe(1);

      // Someone else adds a field and a label.
      const live = await env.client.get<ConfigMap>(CM, "cou", "default");
      await env.client.update({
        ...live,
        metadata: { ...live.metadata, labels: { team: "x" } },
        data: { ...live.data, theirs: "keep" },
      });

      const r2 = await createOrUpdate(c, skeleton, mutate);
      expect(r2.result).toBe("unchanged");
      expect(writes(c)).toBe(1);

      const r3 = await createOrUpdate(c, skeleton, (o) => {
        o.data = { ...o.data, owned: "v2" };
      });
      expect(r3.result).toBe("updated");
      expect(writes(c)).toBe(2);
      const after = await env.client.get<ConfigMap>(CM, "cou", "default");
      expect(after.data).toEqual({ owned: "v2", theirs: "keep" });
      expect(after.metadata.labels).toEqual({ team: "x" });

      await expect(
        createOrUpdate(c, skeleton, (o) => {
          o.metadata.name = "other";
        }),
      ).rejects.toThrow(/name or namespace/);
    } finally {
      c.close();
    }
  });

  it("a stale read fails with a conflict instead of overwriting", async () => {
    const c = new Client({ server: env.url });
    try {
      await env.client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "stale", namespace: "default" },
        data: { a: "1" },
      });
      const old = await env.client.get<ConfigMap>(CM, "stale", "default");
      await env.client.update({ ...old, data: { a: "2" } });
      const staleReader = { get: async <T extends KubeObject>() => old as unknown as T };
      await expect(
        createOrUpdate(
          c,
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "stale", namespace: "default" },
          },
          (o: ConfigMap) => {
            o.data = { a: "3" };
          },
          { reader: staleReader },
        ),
      ).rejects.toSatisfy(isConflict);
      expect((await env.client.get<ConfigMap>(CM, "stale", "default")).data).toEqual({ a: "2" });
    } finally {
      c.close();
    }
  });
});

describe("updateStatusIfChanged", () => {
  it("writes the status subresource only when the status differs", async () => {
    const c = new Client({ server: env.url });
    try {
      await env.client.create({
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: "status-demo" },
      });
      const ns = await c.get<Namespace>({ apiVersion: "v1", kind: "Namespace" }, "status-demo");
      const before = writes(c);
      // Same status (key order and undefined members do not count): no write.
      expect(
        await updateStatusIfChanged(c, ns, { ...ns.status, extra: undefined }),
      ).toBeUndefined();
      expect(writes(c)).toBe(before);
      const cond = {
        type: "Demo",
        status: "True",
        reason: "Test",
        message: "",
        lastTransitionTime: "2030-01-01T00:00:00Z",
      };
      const written = await updateStatusIfChanged(c, ns, { ...ns.status, conditions: [cond] });
      expect(written?.status?.conditions).toEqual([cond]);
      expect(writes(c)).toBe(before + 1);
      expect(await updateStatusIfChanged(c, written!, { ...written!.status })).toBeUndefined();
      expect(writes(c)).toBe(before + 1);
    } finally {
      c.close();
    }
  });
});
