/**
 * `setpoint dev-cluster` for real: three etcd members, two apiservers, two controller
 * managers, two agents and a gateway as processes of their own; kubectl through the
 * kubeconfig it writes sees two Ready nodes on either apiserver, a Deployment's Pods
 * run on the agents, `setpoint doctor` lists both apiservers (identity Leases), the
 * three etcd members with their leader, and the leading controller manager, and
 * SIGTERM stops every process, Pods included.
 */
import { afterAll, expect, it } from "vitest";
import { alive, DevCluster } from "../helpers/dev-cluster.ts";
import { describeWithEtcd } from "../helpers/etcd.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { runSetpoint } from "./helpers/setpoint.ts";

describeWithEtcd("setpoint dev-cluster", () => {
  let cluster: DevCluster | undefined;
  let kubectl: Kubectl | undefined;
  afterAll(async () => {
    await kubectl?.close();
    await cluster?.destroy();
  });

  it("runs every part as its own process, runs a Deployment, and stops them all", async () => {
    cluster = DevCluster.start();
    await cluster.ready();
    const procs = cluster.processes();
    expect(procs.map((p) => p.role).sort()).toEqual([
      "agent",
      "agent",
      "apiserver",
      "apiserver",
      "controller-manager",
      "controller-manager",
      "etcd",
      "etcd",
      "etcd",
      "gateway",
    ]);
    expect(new Set(procs.map((p) => p.pid)).size).toBe(procs.length);
    expect(cluster.stdout).toContain(`export KUBECONFIG=${cluster.kubeconfig}`);

    kubectl = new Kubectl(cluster.kubeconfig);
    const readyNodes = (context: string) =>
      kubectl?.ok([
        "--context",
        context,
        "get",
        "nodes",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}',
      ]);
    expect((await readyNodes("apiserver-0"))?.trim()).toBe("node-0=True node-1=True");
    expect((await readyNodes("apiserver-1"))?.trim()).toBe("node-0=True node-1=True");

    const doctor = await runSetpoint(
      ["doctor", "--kubeconfig", cluster.kubeconfig, "--sample", "0", "-o", "json"],
      60_000,
    );
    const report = JSON.parse(doctor.stdout) as {
      checks: { name: string; verdict: string; items: Record<string, unknown>[] }[];
    };
    const checkOf = (name: string) => report.checks.find((c) => c.name === name);
    const apiserverUrls = procs.filter((p) => p.role === "apiserver").map((p) => p.address);
    expect(checkOf("apiservers")?.verdict, doctor.stdout).toBe("OK");
    expect(checkOf("apiservers")?.items.map((a) => [a.url, a.state])).toEqual(
      apiserverUrls.sort().map((url) => [url, "renewing"]),
    );
    const members = checkOf("etcd")?.items ?? [];
    expect(checkOf("etcd")?.verdict, doctor.stdout).toBe("OK");
    expect(members.map((m) => m.endpoint)).toEqual(
      procs
        .filter((p) => p.role === "etcd")
        .map((p) => p.address)
        .sort(),
    );
    expect(members.filter((m) => m.leader).length).toBe(1);
    expect(checkOf("controllers")?.items).toMatchObject([
      { namespace: "kube-system", name: "setpoint-controller-manager", state: "live" },
    ]);

    await kubectl.ok(["create", "deployment", "web", "--image=hello", "--replicas=2"]);
    await kubectl.ok(["wait", "--for=condition=Available", "deployment/web", "--timeout=60s"], {
      timeoutMs: 70_000,
    });
    const phases = await kubectl.ok([
      "--context",
      "apiserver-1",
      "get",
      "pods",
      "-l",
      "app=web",
      "-o",
      "jsonpath={range .items[*]}{.status.phase} {end}",
    ]);
    expect(phases.trim()).toBe("Running Running");
    const podPids = cluster.podPids();
    expect(podPids.length).toBe(2);

    const exit = await cluster.stop("SIGTERM");
    expect([exit.code, exit.signal], cluster.stderr).toEqual([0, null]);
    expect(cluster.stdout).toMatch(/^Dev cluster stopped\.$/m);
    const left = [...procs.map((p) => p.pid), ...podPids].filter(alive);
    expect(left).toEqual([]);
  }, 240_000);
});
