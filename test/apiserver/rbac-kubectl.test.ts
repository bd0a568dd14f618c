/**
 * RBAC with the real kubectl, as a tenant sees it: a ServiceAccount granted `edit`
 * in its namespace can change a custom resource's spec (the resource's author
 * aggregated it into `edit`) but gets 403 on its status, in Kubernetes' words;
 * cannot read Secrets of another namespace; `kubectl auth can-i` answers truly;
 * and with `admin` in its namespace it still cannot grant itself what it does not
 * hold. Impersonation (`--as`, `--as-group`) is authorized as kube-apiserver
 * authorizes it, and SubjectAccessReview and LocalSubjectAccessReview answer for
 * the subject they name; TokenReview says whose a token is.
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
let tenantToken = "";

beforeAll(async () => {
  srv = await startTestServer({ tls: true, controllers: {} });
  admin = new Kubectl(srv.kubeconfigPath);
  await admin.ok(["apply", "-f", "-"], { input: SETUP });
  tenantToken = (await admin.ok(["create", "token", "tenant", "-n", "team-a"])).trim();
  const kubeconfig = join(admin.home, "tenant-kubeconfig");
  await writeKubeconfig(kubeconfig, { server: srv.url, caCert: srv.caCert!, token: tenantToken });
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

describe("impersonation", () => {
  it("serves the admin as whoever it names, with that user's rights", async () => {
    const who = JSON.parse(
      await admin.ok(["auth", "whoami", "--as=jane", "--as-group=devs", "-o", "json"]),
    );
    expect(who.status.userInfo).toEqual({
      username: "jane",
      groups: ["devs", "system:authenticated"],
    });
    const asSa = JSON.parse(await admin.ok(["auth", "whoami", `--as=${SA}`, "-o", "json"]));
    expect(asSa.status.userInfo.groups).toEqual([
      "system:serviceaccounts",
      "system:serviceaccounts:team-a",
      "system:authenticated",
    ]);
    const jane = await admin.fails(["get", "secrets", "-n", "team-b", "--as=jane"]);
    expect(jane.stderr).toContain(
      'User "jane" cannot list resource "secrets" in API group "" in the namespace "team-b"',
    );
    expect(
      (
        await admin.ok([
          "auth",
          "can-i",
          "create",
          "widgets.example.com",
          "-n",
          "team-a",
          `--as=${SA}`,
        ])
      ).trim(),
    ).toBe("yes");
    const no = await admin.run(["auth", "can-i", "get", "secrets", "-n", "team-b", `--as=${SA}`]);
    expect(no.stdout.trim()).toBe("no");
  });

  it("refuses a caller who may not impersonate, naming what it asked for", async () => {
    const user = await tenant.fails(["get", "configmaps", "-n", "team-a", "--as=jane"]);
    expect(user.stderr).toContain(
      `users "jane" is forbidden: User "${SA}" cannot impersonate resource "users" in API group "" at the cluster scope`,
    );
    // edit lets it impersonate the ServiceAccounts of its own namespace (as in Kubernetes), no others.
    const theirs = await tenant.fails([
      "get",
      "configmaps",
      "-n",
      "team-b",
      "--as=system:serviceaccount:team-b:default",
    ]);
    expect(theirs.stderr).toContain(
      `serviceaccounts "default" is forbidden: User "${SA}" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-b"`,
    );
    const own = await tenant.fails([
      "get",
      "configmaps",
      "-n",
      "team-a",
      "--as=system:serviceaccount:team-a:default",
    ]);
    expect(own.stderr).toContain(
      'User "system:serviceaccount:team-a:default" cannot list resource "configmaps" in API group "" in the namespace "team-a"',
    );
    const group = await tenant.fails([
      "get",
      "configmaps",
      "-n",
      "team-a",
      "--as=system:serviceaccount:team-a:default",
      "--as-group=system:masters",
    ]);
    expect(group.stderr).toContain(
      `groups "system:masters" is forbidden: User "${SA}" cannot impersonate resource "groups" in API group "" at the cluster scope`,
    );
  });
});

describe("SubjectAccessReview and LocalSubjectAccessReview", () => {
  const review = (kind: string, spec: Record<string, unknown>, namespace?: string) =>
    JSON.stringify({
      apiVersion: "authorization.k8s.io/v1",
      kind,
      metadata: namespace ? { namespace } : {},
      spec,
    });

  it("answer for the subject they name, not the caller", async () => {
    const allowed = JSON.parse(
      await admin.ok(["create", "-f", "-", "-o", "json"], {
        input: review("SubjectAccessReview", {
          user: SA,
          groups: ["system:serviceaccounts", "system:serviceaccounts:team-a"],
          resourceAttributes: {
            verb: "create",
            group: "example.com",
            resource: "widgets",
            namespace: "team-a",
          },
        }),
      }),
    );
    expect(allowed.status.allowed).toBe(true);
    // The tenant holds edit in team-a (admin too, once the test above granted it).
    expect(allowed.status.reason).toMatch(
      /^RBAC: allowed by RoleBinding "tenant-(edit|admin)\/team-a" of ClusterRole "(edit|admin)" to ServiceAccount "tenant\/team-a"/,
    );
    const denied = JSON.parse(
      await admin.ok(["create", "-f", "-", "-o", "json"], {
        input: review("SubjectAccessReview", {
          user: SA,
          resourceAttributes: { verb: "get", resource: "secrets", namespace: "team-b" },
        }),
      }),
    );
    expect(denied.status).toEqual({ allowed: false });
    const local = JSON.parse(
      await admin.ok(["create", "-f", "-", "-o", "json"], {
        input: review(
          "LocalSubjectAccessReview",
          {
            user: "jane",
            groups: ["system:masters"],
            resourceAttributes: { verb: "delete", resource: "pods", namespace: "team-a" },
          },
          "team-a",
        ),
      }),
    );
    expect(local.status.allowed).toBe(true);
  });

  it("refuse what Kubernetes refuses, and only those allowed may ask", async () => {
    const nobody = await admin.fails(["create", "-f", "-"], {
      input: review("SubjectAccessReview", {
        resourceAttributes: { verb: "get", resource: "pods" },
      }),
    });
    expect(nobody.stderr).toContain(
      'spec.user: Invalid value: "": at least one of user or group must be specified',
    );
    const elsewhere = await admin.fails(["create", "-f", "-"], {
      input: review(
        "LocalSubjectAccessReview",
        {
          user: "jane",
          resourceAttributes: { verb: "get", resource: "pods", namespace: "team-b" },
        },
        "team-a",
      ),
    });
    expect(elsewhere.stderr).toContain(
      'spec.resourceAttributes.namespace: Invalid value: "team-b": must match metadata.namespace',
    );
    const tenantAsks = await tenant.fails(["create", "-f", "-"], {
      input: review("SubjectAccessReview", {
        user: "jane",
        resourceAttributes: { verb: "get", resource: "pods", namespace: "team-a" },
      }),
    });
    expect(tenantAsks.stderr).toContain(
      `User "${SA}" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`,
    );
  });
});

describe("TokenReview", () => {
  const review = (token: string, audiences?: string[]) =>
    JSON.stringify({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token, ...(audiences ? { audiences } : {}) },
    });
  const create = async (k: Kubectl, body: string) =>
    JSON.parse(await k.ok(["create", "-f", "-", "-o", "json"], { input: body }));

  it("says whose a token is, for which audiences", async () => {
    const known = await create(admin, review(tenantToken));
    expect(known.status).toMatchObject({
      authenticated: true,
      user: {
        username: SA,
        groups: ["system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"],
      },
    });
    expect(known.status.user.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(known.status.audiences).toHaveLength(1);
    const elsewhere = await create(admin, review(tenantToken, ["https://vault.example"]));
    expect(elsewhere.status).toEqual({
      user: {},
      error: "[invalid bearer token, token audiences are invalid for the target audiences]",
    });
    const forged = await create(admin, review(`${tenantToken.slice(0, -4)}AAAA`));
    expect(forged.status).toEqual({
      user: {},
      error: "[invalid bearer token, token signature is invalid]",
    });
    expect((await create(admin, review("not-a-token"))).status).toEqual({ user: {} });
    const empty = await admin.fails(["create", "-f", "-"], { input: review("") });
    expect(empty.stderr).toContain("token is required for TokenReview in authentication");
  });

  it("reviews a token bound to a Secret until the Secret is gone (kubectl create token --bound-object-kind)", async () => {
    await admin.ok(["create", "secret", "generic", "bound-to", "-n", "team-a"]);
    const bound = (
      await admin.ok([
        "create",
        "token",
        "tenant",
        "-n",
        "team-a",
        "--bound-object-kind=Secret",
        "--bound-object-name=bound-to",
      ])
    ).trim();
    expect((await create(admin, review(bound))).status.authenticated).toBe(true);
    await admin.ok(["delete", "secret", "bound-to", "-n", "team-a"]);
    const gone = await eventually(async () => {
      const r = await create(admin, review(bound));
      return r.status.authenticated ? undefined : r;
    }, "the bound token refused");
    expect(gone.status).toEqual({
      user: {},
      error: "[invalid bearer token, service account token has been invalidated]",
    });
  });

  it("may be asked by those bound to system:auth-delegator", async () => {
    const refused = await tenant.fails(["create", "-f", "-"], { input: review(tenantToken) });
    expect(refused.stderr).toContain(
      `User "${SA}" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope`,
    );
    await admin.ok([
      "create",
      "clusterrolebinding",
      "tenant-auth-delegator",
      "--clusterrole=system:auth-delegator",
      "--serviceaccount=team-a:tenant",
    ]);
    const asked = await eventually(async () => {
      const r = await tenant.run(["create", "-f", "-", "-o", "json"], {
        input: review(tenantToken),
      });
      return r.code === 0 ? JSON.parse(r.stdout) : undefined;
    }, "the binding takes effect");
    expect(asked.status.authenticated).toBe(true);
  });
});
