/**
 * A Pod calls the apiserver as its ServiceAccount, with real processes: a real
 * `setpoint up` (ServiceAccount admission, the root CA publisher, the `kubernetes`
 * Service) and a real `setpoint agent`. The Pod gets the kube-api-access volume;
 * the agent writes its token, ca.crt and namespace under the container's root;
 * the runtime's in-cluster config finds them there and reaches the apiserver
 * through the `kubernetes` Service's cluster IP (verified against ca.crt; from a
 * range of the test's own, `setpoint up --service-cluster-ip-range`), as
 * `system:serviceaccount:NS:default`: refused until a RoleBinding lets it list
 * Pods, then listing them.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Pod } from "@setpoint/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventually } from "./helpers.ts";
import { startUpWithAgent, stopUpWithAgent, type UpWithAgent } from "./up-with-agent.ts";

const RANGE = 95;
const NODE = "in-cluster-node";
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

let parts: UpWithAgent | undefined;

beforeAll(async () => {
  parts = await startUpWithAgent({
    prefix: "setpoint-in-cluster-",
    nodeName: NODE,
    range: RANGE,
    tokens: [],
    // A cluster IP range of its own: every cluster on this machine gives its kubernetes
    // Service the first address of its range, and tests run side by side.
    upArgs: ["--service-cluster-ip-range", "127.191.0.0/16"],
  });
}, 90_000);

afterAll(async () => {
  await stopUpWithAgent(parts, RANGE);
});

it("lets a Pod read its token and call the apiserver through the kubernetes Service", async () => {
  const { client, kubectl } = parts!;
  await client.create<Pod>({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "caller", namespace: "default" },
    spec: {
      nodeName: NODE,
      containers: [
        {
          name: "main",
          image: "shell:1",
          command: [
            process.execPath,
            "--import",
            join(ROOT, "node_modules", "tsx", "dist", "loader.mjs"),
            join(ROOT, "test", "agent", "fixtures", "in-cluster-client.ts"),
          ],
          env: [{ name: "TSX_TSCONFIG_PATH", value: join(ROOT, "tsconfig.json") }],
        },
      ],
    },
  } as Pod);
  const pod = await client.get<Pod>({ apiVersion: "v1", kind: "Pod" }, "caller", "default");
  const volume = pod.spec?.volumes?.find((v) => v.name.startsWith("kube-api-access-"));
  expect(pod.spec?.containers[0].volumeMounts).toEqual([
    { name: volume?.name, readOnly: true, mountPath: MOUNT },
  ]);
  // Refused until allowed: it is authenticated as its ServiceAccount.
  await eventually(
    "the Pod refused as its ServiceAccount",
    async () => {
      const text = await kubectl.ok(["logs", "caller"]).catch(() => "");
      return /error: .*system:serviceaccount:default:default.* cannot list resource .*pods/.test(
        text,
      );
    },
    60_000,
    500,
  );
  await kubectl.ok([
    "create",
    "rolebinding",
    "caller-view",
    "--clusterrole=view",
    "--serviceaccount=default:default",
  ]);
  const line = await eventually(
    "the Pod listing the Pods",
    async () =>
      (await kubectl.ok(["logs", "caller", "--tail=1"]))
        .split("\n")
        .find((l) => l.includes("pods: ") && l.includes("caller")),
    30_000,
    500,
  );
  // Through the kubernetes Service's cluster IP, in its own namespace.
  expect(line).toMatch(/^https:\/\/127\.191\.0\.1:443 default pods: .*caller/);
  // The files it read, as the agent wrote them.
  const [root] = (
    await kubectl.ok(["exec", "caller", "--", "sh", "-c", "echo $SETPOINT_ROOT"])
  ).split("\n");
  expect(readFileSync(join(root, MOUNT, "namespace"), "utf8")).toBe("default");
  expect(readFileSync(join(root, MOUNT, "ca.crt"), "utf8")).toContain("BEGIN CERTIFICATE");
  expect(readFileSync(join(root, MOUNT, "token"), "utf8").split(".")).toHaveLength(3);
}, 120_000);
