/**
 * RBAC with the real kubectl, as a tenant sees it: a ServiceAccount granted `edit`
 * in its namespace can change a custom resource's spec (the resource's author
 * aggregated it into `edit`) but gets 403 on its status, in Kubernetes' words;
 * cannot read Secrets of another namespace; `kubectl auth can-i` answers truly;
 * and with `admin` in its namespace it still cannot grant itself what it does not
 * hold.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../../src/apiserver/server/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const SA = "system:serviceaccount:team-a:tenant";

const SETUP = `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant, namespace: team-a}
---
apiVersion: v1
kind: Secret
metadata: {name: theirs, namespace: team-b}
stringData: {password: hunter2}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-edit
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch, create, update, patch, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {kind: ServiceAccount, name: tenant, namespace: team-a}
`;

let srv: TestServer;
let admin: Kubectl;
let tenant: Kubectl;

beforeAll(async () => {
  srv = await startTestServer({ tls: true, controllers: {} });
  admin = new Kubectl(srv.kubeconfigPath);
  await admin.ok(["apply", "-f", "-"], { input: SETUP });
  const token = (await admin.ok(["create", "token", "tenant", "-n", "team-a"])).trim();
  const kubeconfig = join(admin.home, "tenant-kubeconfig");
  await writeKubeconfig(kubeconfig, { server: srv.url, caCert: srv.caCert!, token });
  tenant = new Kubectl(kubeconfig);
  // The aggregation controller adds the widgets rule to `edit`.
  await eventually(async () => {
    const rules = await admin.ok(["get", "clusterrole", "edit", "-o", "jsonpath={.rules}"]);
    return rules.includes("widgets") ? true : undefined;
  }, "edit aggregates widgets-edit");
});

afterAll(async () => {
  await tenant?.close();
  await admin?.close();
  await srv?.stop();
});

describe("RBAC as a tenant meets it", () => {
  it("lets edit change a custom resource's spec but not its status", async () => {
    const widget = `apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: team-a}
spec: {size: 1}
`;
    await tenant.ok(["apply", "-f", "-"], { input: widget });
    await tenant.ok([
      "patch",
      "widget",
      "w",
      "-n",
      "team-a",
      "--type=merge",
      "-p",
      '{"spec":{"size":2}}',
    ]);
    const status = await tenant.fails([
      "patch",
      "widget",
      "w",
      "-n",
      "team-a",
      "--subresource=status",
      "--type=merge",
      "-p",
      '{"status":{"ready":true}}',
    ]);
    expect(status.stderr).toContain(
      `Error from server (Forbidden): widgets.example.com "w" is forbidden: User "${SA}" cannot get resource "widgets/status" in API group "example.com" in the namespace "team-a"`,
    );
  });

  it("keeps another namespace's Secrets out of reach", async () => {
    const r = await tenant.fails(["get", "secret", "theirs", "-n", "team-b"]);
    expect(r.stderr).toContain(
      `secrets "theirs" is forbidden: User "${SA}" cannot get resource "secrets" in API group "" in the namespace "team-b"`,
    );
    const list = await tenant.fails(["get", "secrets", "-A"]);
    expect(list.stderr).toContain(
      `User "${SA}" cannot list resource "secrets" in API group "" at the cluster scope`,
    );
  });

  it("answers kubectl auth can-i truthfully", async () => {
    expect(
      (await tenant.ok(["auth", "can-i", "create", "widgets.example.com", "-n", "team-a"])).trim(),
    ).toBe("yes");
    const no = await tenant.run([
      "auth",
      "can-i",
      "patch",
      "widgets.example.com",
      "--subresource=status",
      "-n",
      "team-a",
    ]);
    expect(no.stdout.trim()).toBe("no");
    const other = await tenant.run(["auth", "can-i", "get", "secrets", "-n", "team-b"]);
    expect(other.stdout.trim()).toBe("no");
    const list = await tenant.ok(["auth", "can-i", "--list", "-n", "team-a"]);
    expect(list).toMatch(
      /widgets\.example\.com\s+\[\]\s+\[\]\s+\[get list watch create update patch delete\]/,
    );
    expect((await admin.ok(["auth", "can-i", "*", "*"])).trim()).toBe("yes");
  });

  it("does not let a namespace admin grant what it does not hold", async () => {
    const grant = `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-admin, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects:
- {kind: ServiceAccount, name: tenant, namespace: team-a}
`;
    // With only edit, no binding at all.
    const denied = await tenant.fails(["apply", "-f", "-"], { input: grant });
    expect(denied.stderr).toContain(
      `cannot get resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "team-a"`,
    );
    await admin.ok(["apply", "-f", "-"], { input: grant });
    // Now admin in team-a: it may write roles there, but not with rules it lacks.
    const nodes = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: nodes-reader, namespace: team-a}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get]}
`;
    const escalation = await tenant.fails(["apply", "-f", "-"], { input: nodes });
    expect(escalation.stderr).toContain(
      `roles.rbac.authorization.k8s.io "nodes-reader" is forbidden: user "${SA}" (groups=["system:serviceaccounts" "system:serviceaccounts:team-a" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:`,
    );
    expect(escalation.stderr).toContain(`{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}`);
    const toClusterAdmin = grant
      .replace("tenant-admin", "tenant-root")
      .replace("name: admin}", "name: cluster-admin}");
    const root = await tenant.fails(["apply", "-f", "-"], { input: toClusterAdmin });
    expect(root.stderr).toContain("is attempting to grant RBAC permissions not currently held");
    // What it holds it may grant.
    const configmaps = nodes
      .replace("nodes-reader", "cm-reader")
      .replace("[nodes]", "[configmaps]");
    await tenant.ok(["apply", "-f", "-"], { input: configmaps });
  });

  it("shows roles and bindings as kubectl get does", async () => {
    const out = await admin.ok(["get", "rolebindings", "-n", "team-a", "-o", "wide"]);
    expect(out).toMatch(/^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS\n/);
    expect(out).toMatch(/tenant-edit\s+ClusterRole\/edit\s+\S+\s+team-a\/tenant/);
    const roles = await admin.ok(["get", "clusterroles", "cluster-admin"]);
    expect(roles).toMatch(/^NAME\s+CREATED AT\ncluster-admin\s+\d{4}-\d\d-\d\dT/);
  });
});
