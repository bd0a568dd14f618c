/**
 * Node authorization with the real kubectl, as a kubelet meets it in Kubernetes
 * (`--authorization-mode=Node,RBAC` and NodeRestriction admission): a node
 * (`system:node:a` in `system:nodes`, by a client certificate) reads the Secrets its
 * Pods use and not others, reads and writes its own Node and Lease but not another
 * node's, writes the status of its Pods and deletes only its Pods, cannot list all
 * Pods or Nodes, cannot set restricted labels on itself; every 403 in Kubernetes'
 * words. It asks for a ServiceAccount token only bound to a Pod of its own
 * (NodeRestriction). `kubectl auth can-i --as system:node:a --as-group system:nodes` answers as
 * the authorizers decide, and no RBAC binding names system:nodes but the proxy's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  issueCertificate,
  type KeyAndCert,
  writeKubeconfig,
} from "../../src/apiserver/server/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const SETUP = `apiVersion: v1
kind: Node
metadata: {name: b}
---
apiVersion: v1
kind: Secret
metadata: {name: used, namespace: default}
stringData: {password: mine}
---
apiVersion: v1
kind: Secret
metadata: {name: unused, namespace: default}
stringData: {password: theirs}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast}
---
apiVersion: v1
kind: Pod
metadata: {name: on-a, namespace: default}
spec:
  nodeName: a
  containers:
  - name: app
    image: app
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: used, key: password}}
    envFrom:
    - configMapRef: {name: settings}
---
apiVersion: v1
kind: Pod
metadata: {name: on-b, namespace: default}
spec:
  nodeName: b
  containers:
  - {name: app, image: app}
`;

const NODE_A = `apiVersion: v1
kind: Node
metadata:
  name: a
  labels: {kubernetes.io/hostname: a, node.kubernetes.io/exclude-from-external-load-balancers: "true"}
`;

const lease = (name: string) => `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: ${name}, namespace: kube-node-lease}
spec: {holderIdentity: ${name}, leaseDurationSeconds: 40}
`;

let srv: TestServer;
let admin: Kubectl;
let nodeA: Kubectl;
let nodesCa: KeyAndCert;
let certA: KeyAndCert;
const POD = { apiVersion: "v1", kind: "Pod" } as const;
const STATUS_PATCH = { type: "merge", subresource: "status" } as const;
const dir = mkdtempSync(join(tmpdir(), "setpoint-node-authz-"));
const AS_A = ["--as", "system:node:a", "--as-group", "system:nodes"];

beforeAll(async () => {
  nodesCa = await issueCertificate({ commonName: "nodes-ca", ca: true });
  srv = await startTestServer({ tls: true, clientCaCerts: [nodesCa.cert] });
  admin = new Kubectl(srv.kubeconfigPath);
  await admin.ok(["apply", "-f", "-"], { input: SETUP });
  certA = await issueCertificate({
    commonName: "system:node:a",
    organizations: ["system:nodes"],
    issuer: nodesCa,
    clientAuth: true,
  });
  const path = join(dir, "node-a.kubeconfig");
  await writeKubeconfig(path, { server: srv.url, caCert: srv.caCert!, clientCertificate: certA });
  nodeA = new Kubectl(path);
}, 60_000);

afterAll(async () => {
  await nodeA?.close();
  await admin?.close();
  await srv?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const forbiddenAs = (verb: string, resource: string, where: string, reason: string) =>
  `User "system:node:a" cannot ${verb} resource "${resource}" in API group "" ${where}: ${reason}`;

describe("a node's identity", () => {
  it("registers and updates its own Node, and not another's", async () => {
    await nodeA.ok(["create", "-f", "-"], { input: NODE_A });
    await nodeA.ok(["annotate", "node", "a", "example.com/seen=yes"]);
    expect(await nodeA.ok(["get", "node", "a", "-o", "name"])).toBe("node/a\n");

    // Another node's object: the Node authorizer lets the write through to
    // NodeRestriction, which refuses it (no read first: a server-side apply).
    const other = await nodeA.fails(["apply", "--server-side", "-f", "-"], {
      input: "apiVersion: v1\nkind: Node\nmetadata: {name: b, labels: {x: z}}\n",
    });
    expect(other.stderr).toContain(
      'nodes "b" is forbidden: node "a" is not allowed to modify node "b"',
    );
    const created = await nodeA.fails(["create", "-f", "-"], {
      input: "apiVersion: v1\nkind: Node\nmetadata: {name: c}\n",
    });
    expect(created.stderr).toContain(
      'nodes "c" is forbidden: node "a" is not allowed to modify node "c"',
    );
    // Reading another Node, or all of them, is the Node authorizer's refusal.
    const read = await nodeA.fails(["get", "node", "b"]);
    expect(read.stderr).toContain(
      `nodes "b" is forbidden: ${forbiddenAs("get", "nodes", "at the cluster scope", "node 'a' cannot read 'b', only its own Node object")}`,
    );
    const list = await nodeA.fails(["get", "nodes"]);
    expect(list.stderr).toContain(
      forbiddenAs(
        "list",
        "nodes",
        "at the cluster scope",
        "node 'a' cannot read all nodes, only its own Node object",
      ),
    );
  });

  it("may not set restricted labels or change its taints", async () => {
    const label = await nodeA.fails([
      "label",
      "node",
      "a",
      "node-restriction.kubernetes.io/tier=gold",
    ]);
    expect(label.stderr).toContain(
      'nodes "a" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/tier',
    );
    const role = await nodeA.fails([
      "label",
      "node",
      "a",
      "node-role.kubernetes.io/control-plane=",
    ]);
    expect(role.stderr).toContain(
      "is not allowed to modify labels: node-role.kubernetes.io/control-plane",
    );
    await nodeA.ok(["label", "node", "a", "node.kubernetes.io/pool=blue", "example.com/free=1"]);
    const taint = await nodeA.fails(["taint", "node", "a", "dedicated=gpu:NoSchedule"]);
    expect(taint.stderr).toContain(
      'nodes "a" is forbidden: node "a" is not allowed to modify taints',
    );
    const registered = await nodeA.fails(["create", "-f", "-"], {
      input:
        "apiVersion: v1\nkind: Node\nmetadata: {name: a, labels: {node-restriction.kubernetes.io/x: v}}\n",
    });
    expect(registered.stderr).toContain(
      'node "a" is not allowed to set the following labels: node-restriction.kubernetes.io/x',
    );
  });

  it("renews its own Lease in kube-node-lease only", async () => {
    await nodeA.ok(["create", "-f", "-"], { input: lease("a") });
    await nodeA.ok(["annotate", "lease", "a", "-n", "kube-node-lease", "renewed=1"]);
    await admin.ok(["create", "-f", "-"], { input: lease("b") });
    const other = await nodeA.fails(["annotate", "lease", "b", "-n", "kube-node-lease", "x=1"]);
    expect(other.stderr).toContain(
      'leases.coordination.k8s.io "b" is forbidden: User "system:node:a" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node',
    );
    const created = await nodeA.fails(["create", "-f", "-"], { input: lease("b2") });
    expect(created.stderr).toContain(
      'leases.coordination.k8s.io "b2" is forbidden: can only access node lease with the same name as the requesting node',
    );
    const elsewhere = await nodeA.fails(["get", "lease", "a", "-n", "default"]);
    expect(elsewhere.stderr).toContain(
      'can only access leases in the "kube-node-lease" system namespace',
    );
  });

  it("reads the Secrets and ConfigMaps its Pods use, and no others", async () => {
    expect(await nodeA.ok(["get", "secret", "used", "-o", "jsonpath={.data.password}"])).toBe(
      Buffer.from("mine").toString("base64"),
    );
    expect(await nodeA.ok(["get", "configmap", "settings", "-o", "jsonpath={.data.mode}"])).toBe(
      "fast",
    );
    const unused = await nodeA.fails(["get", "secret", "unused"]);
    expect(unused.stderr).toContain(
      `secrets "unused" is forbidden: ${forbiddenAs("get", "secrets", 'in the namespace "default"', "no relationship found between node 'a' and this object")}`,
    );
    const all = await nodeA.fails(["get", "secrets"]);
    expect(all.stderr).toContain(
      forbiddenAs("list", "secrets", 'in the namespace "default"', "No Object name found"),
    );
    // A Pod moved to the node brings its Secret with it.
    await admin.ok(["create", "-f", "-"], {
      input: `apiVersion: v1
kind: Pod
metadata: {name: later, namespace: default}
spec:
  nodeName: a
  volumes: [{name: s, secret: {secretName: unused}}]
  containers: [{name: app, image: app}]
`,
    });
    await nodeA.ok(["get", "secret", "unused", "-o", "name"]);
  });

  it("reads, reports on and deletes its own Pods only", async () => {
    expect(
      await nodeA.ok(["get", "pods", "--field-selector", "spec.nodeName=a", "-o", "name"]),
    ).toContain("pod/on-a");
    const all = await nodeA.fails(["get", "pods"]);
    expect(all.stderr).toContain(
      forbiddenAs(
        "list",
        "pods",
        'in the namespace "default"',
        "can only list/watch pods with spec.nodeName field selector",
      ),
    );
    const other = await nodeA.fails(["get", "pod", "on-b"]);
    expect(other.stderr).toContain("no relationship found between node 'a' and this object");

    // Status as the agent writes it: a merge patch, no read first.
    const client = new Client({
      ...srv.config,
      token: undefined,
      cert: Buffer.from(certA.cert),
      key: Buffer.from(certA.key),
    });
    try {
      const patched = await client.patch(
        POD,
        "on-a",
        "default",
        { status: { message: "running on a" } },
        STATUS_PATCH,
      );
      expect((patched as { status?: { message?: string } }).status?.message).toBe("running on a");
      const theirs = await client
        .patch(POD, "on-b", "default", { status: { message: "stolen" } }, STATUS_PATCH)
        .then(
          () => undefined,
          (err: unknown) => err as Error,
        );
      expect((theirs as Error | undefined)?.message).toContain(
        'pods "on-b" is forbidden: node "a" can only update pod status for pods with spec.nodeName set to itself',
      );
    } finally {
      client.close();
    }

    const deleteTheirs = await nodeA.fails(["delete", "pod", "on-b", "--wait=false"]);
    expect(deleteTheirs.stderr).toContain(
      'pods "on-b" is forbidden: node "a" can only delete pods with spec.nodeName set to itself',
    );
    await nodeA.ok(["delete", "pod", "on-a", "--wait=false"]);
    const made = await nodeA.fails(["run", "mine", "--image", "app"]);
    expect(made.stderr).toContain(
      'pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods',
    );
  });

  it("asks for ServiceAccount tokens bound to its own Pods only", async () => {
    await admin.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: ServiceAccount
metadata: {name: runner, namespace: default}
---
apiVersion: v1
kind: Pod
metadata: {name: tok-a, namespace: default}
spec: {nodeName: a, serviceAccountName: runner, containers: [{name: app, image: app}]}
---
apiVersion: v1
kind: Pod
metadata: {name: tok-b, namespace: default}
spec: {nodeName: b, serviceAccountName: runner, containers: [{name: app, image: app}]}
`,
    });
    const uid = async (pod: string) =>
      (await admin.ok(["get", "pod", pod, "-o", "jsonpath={.metadata.uid}"])).trim();
    const [uidA, uidB] = [await uid("tok-a"), await uid("tok-b")];
    const token = (...args: string[]) => ["create", "token", "runner", ...args];
    const bound = (pod: string, podUid?: string) => [
      "--bound-object-kind",
      "Pod",
      "--bound-object-name",
      pod,
      ...(podUid ? ["--bound-object-uid", podUid] : []),
    ];
    const refused = 'serviceaccounts "runner" is forbidden: ';
    expect((await nodeA.fails(token())).stderr).toContain(
      `${refused}node requested token not bound to a pod`,
    );
    expect((await nodeA.fails(token(...bound("tok-a")))).stderr).toContain(
      `${refused}node requested token with a pod binding without a uid`,
    );
    expect((await nodeA.fails(token(...bound("tok-b", uidB)))).stderr).toContain(
      `${refused}node requested token bound to a pod scheduled on a different node`,
    );
    expect((await nodeA.fails(token(...bound("tok-a", "not-its-uid")))).stderr).toContain(
      `${refused}the UID in the bound object reference (not-its-uid) does not match the UID in record. The object might have been deleted and then recreated`,
    );
    expect((await nodeA.fails(token(...bound("gone", uidA)))).stderr).toContain(
      'pods "gone" not found',
    );
    const made = (await nodeA.ok(token(...bound("tok-a", uidA)))).trim();
    expect(made.split(".")).toHaveLength(3);
    // The admin is not a node: no binding needed.
    expect((await admin.ok(token())).trim().split(".")).toHaveLength(3);
  });

  it("writes Events and nothing beyond the node's rules", async () => {
    await nodeA.ok(["create", "-f", "-"], {
      input: `apiVersion: v1
kind: Event
metadata: {name: a.started, namespace: default}
involvedObject: {kind: Node, name: a}
reason: Starting
message: started
type: Normal
`,
    });
    const deploy = await nodeA.fails(["create", "deployment", "x", "--image", "app"]);
    expect(deploy.stderr).toContain(
      'User "system:node:a" cannot create resource "deployments" in API group "apps" in the namespace "default"',
    );
  });

  it("is what kubectl auth can-i --as a node answers", async () => {
    // kubectl prints the reason after a "no" when there is one.
    const can = async (...args: string[]) =>
      (await admin.run(["auth", "can-i", ...args, ...AS_A])).stdout.trim().split(" ")[0];
    expect(await can("get", "secret/used")).toBe("yes");
    expect(await can("get", "secret/unused")).toBe("yes"); // the Pod "later" uses it now
    expect(await can("get", "secret/nobody-uses")).toBe("no");
    const why = await admin.run(["auth", "can-i", "get", "secret/nobody-uses", ...AS_A]);
    expect(why.stdout.trim()).toBe("no - no relationship found between node 'a' and this object");
    expect(await can("list", "secrets")).toBe("no");
    expect(await can("get", "node/a")).toBe("yes");
    expect(await can("get", "node/b")).toBe("no");
    expect(await can("update", "nodes/status")).toBe("yes");
    expect(await can("update", "lease/a", "-n", "kube-node-lease")).toBe("yes");
    expect(await can("update", "lease/b", "-n", "kube-node-lease")).toBe("no");
    expect(await can("list", "pods")).toBe("no");
    expect(await can("create", "events")).toBe("yes");
    expect(await can("list", "endpointslices.discovery.k8s.io")).toBe("yes");
    expect(await can("create", "deployments.apps")).toBe("no");
    expect(await can("delete", "namespaces")).toBe("no");
    // Without the group, the same name is no node.
    const bare = await admin.run(["auth", "can-i", "get", "node/a", "--as", "system:node:a"]);
    expect(bare.stdout.trim()).toBe("no");
  });
});

describe("the gateway's identity", () => {
  it("reads what it routes by and writes only its Ingresses' status", async () => {
    const can = async (...args: string[]) =>
      (await admin.run(["auth", "can-i", ...args, "--as", "system:setpoint:gateway"])).stdout
        .trim()
        .split(" ")[0];
    expect(await can("watch", "ingresses.networking.k8s.io", "-A")).toBe("yes");
    expect(await can("list", "ingressclasses.networking.k8s.io")).toBe("yes");
    expect(await can("list", "endpointslices.discovery.k8s.io", "-A")).toBe("yes");
    expect(await can("list", "secrets", "-A")).toBe("yes");
    expect(await can("update", "ingresses.networking.k8s.io", "--subresource=status")).toBe("yes");
    expect(await can("update", "ingresses.networking.k8s.io")).toBe("no");
    expect(await can("create", "pods")).toBe("no");
    expect(await can("get", "nodes")).toBe("no");
  });
});
