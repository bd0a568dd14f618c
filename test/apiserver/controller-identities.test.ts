/**
 * The built-in controllers as their own identities, as Kubernetes runs them: a
 * control plane with a data dir (as `setpoint up` starts it) runs a Deployment to
 * scheduled Pods and garbage-collects it, and its audit log shows who wrote what:
 * the controller manager (`system:kube-controller-manager`) only lists and
 * watches and mints its controllers' tokens, the Deployment controller creates
 * the ReplicaSet, the ReplicaSet controller the Pods, the scheduler
 * (`system:kube-scheduler`) binds them, the garbage collector deletes them, each
 * as its ServiceAccount in kube-system. Each can do only what its bootstrap role
 * says (SubjectAccessReviews and kubectl auth can-i), and taking a controller's
 * binding away stops it with a 403.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeObject, Node, Pod, ReplicaSet } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/apiserver/audit/index.ts";
import { type ControlPlane, startControlPlane } from "../../src/controlplane/index.ts";
import { nodeStatus } from "../controllers/helpers.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";

const NODE = { apiVersion: "v1", kind: "Node" } as const;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const RS = { apiVersion: "apps/v1", kind: "ReplicaSet" } as const;
const DEPLOYMENT = { apiVersion: "apps/v1", kind: "Deployment" } as const;
const CRB = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding" } as const;
const WAIT_MS = 30_000;

const sa = (name: string) => `system:serviceaccount:kube-system:${name}`;

/** A Deployment or ReplicaSet in `work` of `replicas` Pods labelled app=NAME. */
function workload(
  type: { apiVersion: string; kind: string },
  name: string,
  replicas: number,
): KubeObject {
  return {
    ...type,
    metadata: { name, namespace: "work" },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image: "hello" }] },
      },
    },
  };
}

interface AuditEvent {
  stage: string;
  verb: string;
  user: { username?: string };
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
}

describe("the built-in controllers as their own identities", () => {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-controller-identities-"));
  const logPath = join(dir, "audit.log");
  let cp: ControlPlane;
  let admin: Client;
  let kubectl: Kubectl;

  const events = (): AuditEvent[] =>
    readFileSync(logPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent)
      .filter((e) => e.stage === "ResponseComplete");
  const writers = (resource: string, verb: string, subresource?: string): Set<string> =>
    new Set(
      events()
        .filter(
          (e) =>
            e.verb === verb &&
            e.objectRef?.resource === resource &&
            e.objectRef?.subresource === subresource &&
            e.objectRef?.namespace === "work",
        )
        .map((e) => e.user.username ?? ""),
    );

  beforeAll(async () => {
    cp = await startControlPlane({
      dataDir: join(dir, "data"),
      controllers: {},
      audit: {
        policy: parsePolicy(
          "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
        ),
        path: logPath,
      },
    });
    admin = new Client(cp.config);
    kubectl = new Kubectl(cp.kubeconfigPath);
    const node = await admin.create<Node>({ ...NODE, metadata: { name: "n1" } });
    await admin.updateStatus<Node>({ ...node, status: nodeStatus("8") });
    await admin.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "work" } });
  }, 60_000);

  afterAll(async () => {
    await kubectl?.close();
    admin?.close();
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "run a Deployment to bound Pods and collect it, each writing as itself",
    async () => {
      await admin.create(workload(DEPLOYMENT, "web", 2));
      await eventually(
        async () => {
          const pods = await admin.list<Pod>(POD, { namespace: "work" });
          return pods.items.length === 2 && pods.items.every((p) => p.spec?.nodeName === "n1");
        },
        "two Pods bound to n1",
        WAIT_MS,
      );
      await admin.delete(DEPLOYMENT, "web", "work");
      // Deleted (with no agent to confirm, they wait out their grace period).
      await eventually(
        async () =>
          (await admin.list<Pod>(POD, { namespace: "work" })).items.every(
            (p) => p.metadata.deletionTimestamp !== undefined,
          ),
        "the Pods collected",
        WAIT_MS,
      );
      await eventually(
        async () => (await admin.list<ReplicaSet>(RS, { namespace: "work" })).items.length === 0,
        "the ReplicaSet collected",
        WAIT_MS,
      );
      expect(writers("replicasets", "create")).toEqual(new Set([sa("deployment-controller")]));
      expect(writers("pods", "create")).toEqual(new Set([sa("replicaset-controller")]));
      expect(writers("pods", "create", "binding")).toEqual(new Set(["system:kube-scheduler"]));
      expect(writers("replicasets", "delete")).toEqual(new Set([sa("generic-garbage-collector")]));
      expect(writers("deployments", "update", "status")).toEqual(
        new Set([sa("deployment-controller")]),
      );
      // The manager's own identity reads for the shared informers and mints tokens.
      const manager = events().filter((e) => e.user.username === "system:kube-controller-manager");
      expect(manager.map((e) => e.verb)).toContain("list");
      for (const e of manager)
        expect(["list", "watch", "get", "create", "update"]).toContain(e.verb);
      for (const e of manager.filter((x) => x.verb === "create")) {
        expect(`${e.objectRef?.resource}/${e.objectRef?.subresource ?? ""}`).toMatch(
          /^(serviceaccounts\/token|serviceaccounts\/|leases\/)$/,
        );
      }
      // No write in the namespace came from the admin or the loopback identity.
      const others = events().filter(
        (e) =>
          e.objectRef?.namespace === "work" &&
          !["get", "list", "watch"].includes(e.verb) &&
          e.user.username !== "admin" &&
          !e.user.username?.startsWith("system:serviceaccount:kube-system:") &&
          e.user.username !== "system:kube-scheduler",
      );
      expect(others).toEqual([]);
    },
    WAIT_MS * 3,
  );

  it("each may do only what its role says (kubectl auth can-i --as)", async () => {
    const can = async (who: string, ...args: string[]): Promise<string> => {
      const r = await kubectl.run(["auth", "can-i", ...args, "--as", who]);
      return `${r.stdout.trim()}${r.stderr.includes("rror") ? r.stderr : ""}`;
    };
    // Kubernetes' system:kube-controller-manager reads for informers and makes
    // ServiceAccounts and tokens; it writes no workload.
    expect(await can("system:kube-controller-manager", "list", "secrets", "-A")).toBe("yes");
    expect(await can("system:kube-controller-manager", "create", "pods", "-n", "work")).toBe("no");
    expect(await can("system:kube-controller-manager", "delete", "deployments", "-n", "work")).toBe(
      "no",
    );
    // The scheduler binds Pods and reads no Secret.
    expect(
      await can(
        "system:kube-scheduler",
        "create",
        "pods",
        "--subresource",
        "binding",
        "-n",
        "work",
      ),
    ).toBe("yes");
    expect(await can("system:kube-scheduler", "get", "secrets", "-n", "work")).toBe("no");
    expect(await can("system:kube-scheduler", "create", "pods", "-n", "work")).toBe("no");
    // The ReplicaSet controller makes Pods but cannot touch Deployments or Secrets.
    expect(await can(sa("replicaset-controller"), "create", "pods", "-n", "work")).toBe("yes");
    expect(await can(sa("replicaset-controller"), "delete", "deployments", "-n", "work")).toBe(
      "no",
    );
    expect(await can(sa("replicaset-controller"), "get", "secrets", "-n", "work")).toBe("no");
    // The garbage collector deletes anything, and creates nothing.
    expect(await can(sa("generic-garbage-collector"), "delete", "secrets", "-n", "work")).toBe(
      "yes",
    );
    expect(await can(sa("generic-garbage-collector"), "create", "pods", "-n", "work")).toBe("no");
  });

  it(
    "a controller whose binding is taken away is refused with a 403",
    async () => {
      await admin.delete(CRB, "system:controller:replicaset-controller");
      await admin.create(workload(RS, "lone", 1));
      await eventually(
        () =>
          events().some(
            (e) =>
              e.verb === "create" &&
              e.objectRef?.resource === "pods" &&
              e.objectRef.namespace === "work" &&
              e.user.username === sa("replicaset-controller") &&
              e.responseStatus?.code === 403,
          ),
        "the ReplicaSet controller's Pod create refused",
        WAIT_MS,
      );
      expect(
        (await admin.list<Pod>(POD, { namespace: "work", labelSelector: "app=lone" })).items,
      ).toEqual([]);
      const lone = await admin.get<KubeObject>(RS, "lone", "work");
      expect(lone.metadata.name).toBe("lone");
    },
    WAIT_MS * 2,
  );
});
