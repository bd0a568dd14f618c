/**
 * kubectl's typed commands, which send (and ask for) Kubernetes protobuf for the
 * built-in kinds: create job, service, ingress, role, rolebinding, clusterrole,
 * clusterrolebinding and poddisruptionbudget, expose, describe (protobuf answers),
 * and `get -o yaml` fed back to `replace`. Each object is then read back through the JSON API to check that
 * what kubectl meant is what was stored.
 */
import type { KubeObject } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshNamespace } from "../helpers/namespace.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { Kubectl } from "./helpers/kubectl.ts";

let srv: TestServer;
let k: Kubectl;
let ns: string;

beforeAll(async () => {
  srv = await startTestServer({ controllers: {} });
  k = new Kubectl(srv.kubeconfigPath);
  ns = await freshNamespace(srv.client);
});

afterAll(async () => {
  await k?.close();
  await srv?.stop();
});

const kubectl = (...args: string[]) => k.ok([...args, "-n", ns]);
// biome-ignore lint/suspicious/noExplicitAny: the tests read nested fields of several kinds.
type Loose = KubeObject & Record<string, any>;
const get = (apiVersion: string, kind: string, name: string, namespace: string | undefined = ns) =>
  srv.client.get<Loose>({ apiVersion, kind }, name, namespace);

describe("kubectl's typed commands speak protobuf", () => {
  it("create job", async () => {
    // The namespace before "--": what follows is the container's command.
    expect(
      await k.ok(["create", "job", "once", "-n", ns, "--image=busybox:1.36", "--", "echo", "hi"]),
    ).toBe("job.batch/once created\n");
    const job = await get("batch/v1", "Job", "once");
    expect(job.spec.template.spec.containers).toMatchObject([
      { name: "once", image: "busybox:1.36", command: ["echo", "hi"] },
    ]);
    expect(job.spec.template.spec.restartPolicy).toBe("Never");
  });

  it("create service clusterip, and expose a Deployment", async () => {
    expect(await kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")).toBe(
      "service/web created\n",
    );
    const svc = await get("v1", "Service", "web");
    expect(svc.spec.ports).toEqual([
      { name: "80-8080", port: 80, protocol: "TCP", targetPort: 8080 },
    ]);
    expect(svc.spec.selector).toEqual({ app: "web" });
    expect(svc.spec.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

    expect(await kubectl("create", "deployment", "api", "--image=nginx:1.27", "--port=80")).toBe(
      "deployment.apps/api created\n",
    );
    expect(
      await kubectl(
        "expose",
        "deployment",
        "api",
        "--name=api-svc",
        "--port=8000",
        "--target-port=80",
      ),
    ).toBe("service/api-svc exposed\n");
    const exposed = await get("v1", "Service", "api-svc");
    expect(exposed.spec.selector).toEqual({ app: "api" });
    expect(exposed.spec.ports).toEqual([{ port: 8000, protocol: "TCP", targetPort: 80 }]);
  });

  it("create ingress", async () => {
    expect(
      await kubectl(
        "create",
        "ingress",
        "web",
        "--class=default",
        "--rule=example.com/api*=api-svc:8000",
      ),
    ).toBe("ingress.networking.k8s.io/web created\n");
    const ing = await get("networking.k8s.io/v1", "Ingress", "web");
    expect(ing.spec).toEqual({
      ingressClassName: "default",
      rules: [
        {
          host: "example.com",
          http: {
            paths: [
              {
                path: "/api",
                pathType: "Prefix",
                backend: { service: { name: "api-svc", port: { number: 8000 } } },
              },
            ],
          },
        },
      ],
    });
  });

  it("create role, rolebinding, clusterrole and clusterrolebinding", async () => {
    expect(await kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods")).toBe(
      "role.rbac.authorization.k8s.io/reader created\n",
    );
    expect((await get("rbac.authorization.k8s.io/v1", "Role", "reader")).rules).toEqual([
      { apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] },
    ]);
    expect(
      await kubectl(
        "create",
        "rolebinding",
        "reader",
        "--role=reader",
        `--serviceaccount=${ns}:default`,
        "--user=ann",
      ),
    ).toBe("rolebinding.rbac.authorization.k8s.io/reader created\n");
    const rb = await get("rbac.authorization.k8s.io/v1", "RoleBinding", "reader");
    expect(rb.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "reader",
    });
    expect(rb.subjects).toEqual([
      { apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "ann" },
      { kind: "ServiceAccount", name: "default", namespace: ns },
    ]);
    const cr = `${ns}-nodes`;
    expect(
      await k.ok([
        "create",
        "clusterrole",
        cr,
        "--verb=get",
        "--resource=nodes",
        "--non-resource-url=/healthz",
      ]),
    ).toBe(`clusterrole.rbac.authorization.k8s.io/${cr} created\n`);
    expect(
      await k.ok(["create", "clusterrolebinding", cr, `--clusterrole=${cr}`, "--group=ops"]),
    ).toBe(`clusterrolebinding.rbac.authorization.k8s.io/${cr} created\n`);
    expect(
      (await get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", cr, undefined)).subjects,
    ).toEqual([{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "ops" }]);
  });

  it("create poddisruptionbudget", async () => {
    expect(
      await kubectl(
        "create",
        "poddisruptionbudget",
        "api",
        "--selector=app=api",
        "--min-available=1",
      ),
    ).toBe("poddisruptionbudget.policy/api created\n");
    const pdb = await get("policy/v1", "PodDisruptionBudget", "api");
    expect(pdb.spec).toEqual({ minAvailable: 1, selector: { matchLabels: { app: "api" } } });
  });

  it("describe, which reads protobuf objects and lists (its Deployment, ReplicaSets, Events)", async () => {
    const out = await kubectl("describe", "deployment", "api");
    expect(out).toMatch(/^Name:\s+api$/m);
    expect(out).toMatch(/^Selector:\s+app=api$/m);
    expect(out).toMatch(/^Replicas:\s+1 desired/m);
    expect(out).toMatch(/^\s+Image:\s+nginx:1\.27$/m);
  });

  it("get -o yaml, then replace with what it printed", async () => {
    const yaml = await kubectl("get", "deployment", "api", "-o", "yaml");
    expect(yaml).toContain("kind: Deployment");
    expect(await k.ok(["replace", "-f", "-", "-n", ns], { input: yaml })).toBe(
      "deployment.apps/api replaced\n",
    );
  });
});
