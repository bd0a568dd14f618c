/**
 * The workload kinds' validation: Kubernetes' messages for the common mistakes, as
 * the strategies produce them and as kubectl prints them from a real apiserver, and
 * the fields that are immutable once set.
 */
import type { KubeObject, StatusCause } from "@setpoint/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  validateDeployment,
  validateJob,
  validatePod,
} from "../../src/registry/builtin/workloads/validation.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { type E2eServer, startE2eServer } from "../e2e/helpers/server.ts";

const container = { name: "web", image: "demo/hello:1.0" };

function pod(spec: Record<string, unknown>): KubeObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec };
}

function deployment(spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d" },
    spec: {
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [container] } },
      ...spec,
    },
  };
}

const lines = (causes: StatusCause[]) => causes.map((c) => `${c.field}: ${c.message}`);

describe("workload validation messages", () => {
  it("names a pod spec's common mistakes as Kubernetes does", () => {
    expect(lines(validatePod(pod({ containers: [] }), undefined))).toEqual([
      "spec.containers: Required value",
    ]);
    expect(
      lines(
        validatePod(
          pod({
            containers: [
              { name: "Web", image: "x" },
              { name: "a", image: "" },
              { name: "a", image: "y", ports: [{ containerPort: 70000 }] },
            ],
            restartPolicy: "Sometimes",
          }),
          undefined,
        ),
      ),
    ).toEqual([
      `spec.containers[0].name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      "spec.containers[1].image: Required value",
      'spec.containers[2].name: Duplicate value: "a"',
      "spec.containers[2].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ]);
  });

  it("lets a Pod update change images, add tolerations and shorten the deadline only", () => {
    const old = pod({ containers: [container], tolerations: [] });
    const images = pod({
      containers: [{ ...container, image: "demo/hello:2.0" }],
      tolerations: [],
    });
    expect(validatePod(images, old)).toEqual([]);
    const added = pod({
      containers: [container],
      tolerations: [{ key: "k", operator: "Exists" }],
      activeDeadlineSeconds: 30,
    });
    expect(validatePod(added, old)).toEqual([]);
    const bound = pod({ containers: [container], tolerations: [], nodeName: "n1" });
    expect(validatePod(bound, old), "binding sets nodeName once").toEqual([]);
    const ports = pod({ containers: [{ ...container, ports: [{ containerPort: 80 }] }] });
    expect(lines(validatePod(ports, old))[0]).toMatch(
      /^spec: Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`,/,
    );
    const moved = pod({ containers: [container], tolerations: [], nodeName: "n2" });
    expect(lines(validatePod(moved, bound))[0]).toMatch(/^spec: Forbidden: pod updates/);
  });

  it("checks a Deployment's selector, template, replicas and strategy", () => {
    expect(validateDeployment(deployment({}), undefined)).toEqual([]);
    expect(
      lines(
        validateDeployment(
          deployment({
            replicas: -1,
            selector: { matchLabels: { app: "other" } },
            strategy: {
              type: "RollingUpdate",
              rollingUpdate: { maxSurge: 0, maxUnavailable: "0%" },
            },
          }),
          undefined,
        ),
      ),
    ).toEqual([
      "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
      'spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`',
      'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0',
    ]);
    expect(lines(validateDeployment(deployment({ selector: {} }), undefined))).toEqual([
      "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
    ]);
    const never = deployment({});
    (never.spec as { template: { spec: Record<string, unknown> } }).template.spec.restartPolicy =
      "Never";
    expect(lines(validateDeployment(never, undefined))).toEqual([
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
  });

  it("keeps selectors immutable and a Job's restart policy to OnFailure or Never", () => {
    const moved = deployment({
      selector: { matchLabels: { app: "web", tier: "x" } },
      template: {
        metadata: { labels: { app: "web", tier: "x" } },
        spec: { containers: [container] },
      },
    });
    expect(lines(validateDeployment(moved, deployment({})))).toEqual([
      'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"x"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
    ]);
    const job: KubeObject = {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "j" },
      spec: {
        selector: { matchLabels: { "batch.kubernetes.io/controller-uid": "u" } },
        template: {
          metadata: { labels: { "batch.kubernetes.io/controller-uid": "u" } },
          spec: { containers: [container], restartPolicy: "Always" },
        },
      },
    };
    expect(lines(validateJob(job, undefined))).toEqual([
      'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    ]);
  });
});

describe("workload validation through kubectl", () => {
  let server: E2eServer;
  let kubectl: Kubectl;

  beforeAll(async () => {
    server = await startE2eServer();
    kubectl = new Kubectl(server.kubeconfig);
  });

  afterAll(async () => {
    await kubectl?.close();
    await server?.close();
  });

  it("explains the workload kinds' fields", async () => {
    const out = await kubectl.ok(["explain", "deployment.spec.progressDeadlineSeconds"]);
    expect(out).toMatch(/FIELD:\s+progressDeadlineSeconds <integer>/);
    expect(out).toContain("Seconds without progress before the rollout is reported as failed");
    const ports = await kubectl.ok(["explain", "pods.spec.containers.ports"]);
    expect(ports).toMatch(/containerPort\s+<integer> -required-/);
    expect(ports).toContain("The port the container listens on.");
  });

  it("refuses a Pod update beyond images, and a Deployment's new selector, with Kubernetes' words", async () => {
    const podYaml = (port: number) => `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: web, image: demo/hello:1.0, ports: [{containerPort: ${port}}]}
`;
    await kubectl.ok(["apply", "-f", "-"], { input: podYaml(8080) });
    const changed = await kubectl.fails(["apply", "-f", "-"], { input: podYaml(9090) });
    expect(changed.stderr).toContain(
      'The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`',
    );
    const image = await kubectl.ok(["set", "image", "pod/web", "web=demo/hello:2.0"]);
    expect(image).toContain("pod/web image updated");

    const deployYaml = (tier: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web, tier: ${tier}}}
  template:
    metadata: {labels: {app: web, tier: ${tier}}}
    spec: {containers: [{name: web, image: demo/hello:1.0}]}
`;
    await kubectl.ok(["apply", "-f", "-"], { input: deployYaml("a") });
    const moved = await kubectl.fails(["apply", "-f", "-"], { input: deployYaml("b") });
    expect(moved.stderr).toContain(
      'The Deployment "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
    );
  });
});
