/**
 * Admission webhooks through the real kubectl, served by the runtime's
 * WebhookServer over TLS: a validating webhook refuses, warns and is told about
 * dry runs; a mutating webhook's JSON patch is stored; namespace and object
 * selectors pick the writes; failurePolicy decides for a webhook that cannot be
 * reached or is too slow; matchConditions (CEL) narrow the writes a webhook is
 * called for; DELETE is admitted too; a webhook reached through a
 * Service's endpoints; and the configurations are validated and listed as
 * Kubernetes does.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { KubeObject } from "@setpoint/api";
import {
  type AdmissionRequest,
  defaultingHandler,
  validatingHandler,
  WebhookServer,
} from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTlsMaterial } from "../../src/apiserver/server/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let srv: TestServer;
let kubectl: Kubectl;
let hooks: WebhookServer;
let caBundle: string;
const seen: AdmissionRequest[] = [];

type ConfigMap = KubeObject & { data?: Record<string, string> };

beforeAll(async () => {
  srv = await startTestServer({ tls: true });
  kubectl = new Kubectl(srv.kubeconfigPath);
  const tls = await generateTlsMaterial(["127.0.0.1", "hooks.webhooks.svc"]);
  caBundle = Buffer.from(tls.caCert).toString("base64");
  hooks = new WebhookServer({ cert: tls.cert, key: tls.key });
  hooks.register(
    "/validate",
    validatingHandler<ConfigMap>((req) => {
      seen.push(req);
      const cm = req.object ?? req.oldObject;
      if (req.operation === "DELETE") {
        return cm?.metadata.labels?.protected === "true" ? "this one is protected" : undefined;
      }
      if (cm?.data?.forbidden !== undefined) return "key forbidden is not allowed";
      if (cm?.data?.warn !== undefined) return { allowed: true, warnings: ["warn is deprecated"] };
      return undefined;
    }),
  );
  hooks.register(
    "/mutate",
    defaultingHandler<ConfigMap>((cm) => {
      cm.metadata.labels = { ...cm.metadata.labels, mutated: "yes" };
      cm.data = { ...cm.data, defaulted: "true" };
    }),
  );
  hooks.register(
    "/slow",
    validatingHandler(async () => {
      await sleep(15_000);
      return undefined;
    }),
  );
  await hooks.start();
  await kubectl.ok(["apply", "-f", "-"], {
    input: `apiVersion: v1
kind: Namespace
metadata: {name: checked, labels: {webhooks: "on"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: unchecked}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: configmaps}
webhooks:
- name: deny.example.com
  clientConfig: {url: "${hooks.url("/validate")}", caBundle: ${caBundle}}
  rules:
  - {operations: [CREATE, UPDATE, DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {webhooks: "on"}}
  objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: defaults}
webhooks:
- name: defaults.example.com
  clientConfig: {url: "${hooks.url("/mutate")}", caBundle: ${caBundle}}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {webhooks: "on"}}
  sideEffects: None
  admissionReviewVersions: [v1]
`,
  });
}, 60_000);

afterAll(async () => {
  await kubectl?.close();
  await hooks?.stop();
  await srv?.stop();
});

describe("admission webhooks", () => {
  it("lists configurations with their webhook count, and defaults them as Kubernetes does", async () => {
    const out = await kubectl.ok(["get", "validatingwebhookconfigurations"]);
    expect(out.split("\n")[0]).toMatch(/^NAME\s+WEBHOOKS\s+AGE$/);
    expect(out).toMatch(/^configmaps\s+1\s+\d+s$/m);
    const cfg = JSON.parse(
      await kubectl.ok(["get", "mutatingwebhookconfiguration", "defaults", "-o", "json"]),
    );
    const w = cfg.webhooks[0];
    expect(w).toMatchObject({
      failurePolicy: "Fail",
      matchPolicy: "Equivalent",
      objectSelector: {},
      timeoutSeconds: 10,
      reinvocationPolicy: "Never",
    });
    expect(w.rules[0].scope).toBe("*");
  });

  it("refuses a configuration with Kubernetes' messages", async () => {
    const r = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: broken}
webhooks:
- name: short
  clientConfig: {url: "http://127.0.0.1:1/x"}
  timeoutSeconds: 31
  admissionReviewVersions: [v1]
`,
    });
    expect(r.stderr).toContain(
      'webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots',
    );
    expect(r.stderr).toContain(
      "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
    );
    expect(r.stderr).toContain(
      "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
    );
    expect(r.stderr).toContain(
      `webhooks[0].clientConfig.url: Invalid value: "http://127.0.0.1:1/x": 'https' is the only allowed URL scheme`,
    );
  });

  it("refuses a write the validating webhook denies, in the webhook's words", async () => {
    const r = await kubectl.fails([
      "create",
      "configmap",
      "bad",
      "-n",
      "checked",
      "--from-literal=forbidden=1",
    ]);
    expect(r.stderr).toContain(
      'admission webhook "deny.example.com" denied the request: key forbidden is not allowed',
    );
    await kubectl.fails(["get", "configmap", "bad", "-n", "checked"]);
  });

  it("stores what the mutating webhook patched, and the validating webhook sees it", async () => {
    await kubectl.ok(["create", "configmap", "good", "-n", "checked", "--from-literal=a=1"]);
    const cm = JSON.parse(
      await kubectl.ok(["get", "configmap", "good", "-n", "checked", "-o", "json"]),
    ) as ConfigMap;
    expect(cm.metadata.labels).toEqual({ mutated: "yes" });
    expect(cm.data).toEqual({ a: "1", defaulted: "true" });
    const req = seen.findLast((s) => s.name === "good" && s.operation === "CREATE");
    expect(req).toMatchObject({
      kind: { group: "", version: "v1", kind: "ConfigMap" },
      resource: { group: "", version: "v1", resource: "configmaps" },
      namespace: "checked",
      dryRun: false,
      options: { kind: "CreateOptions", apiVersion: "meta.k8s.io/v1" },
      oldObject: null,
    });
    expect((req?.object as ConfigMap | undefined)?.data?.defaulted).toBe("true");
    expect(req?.userInfo.groups).toContain("system:masters");
  });

  it("passes the webhook's warnings to kubectl", async () => {
    const r = await kubectl.run([
      "create",
      "configmap",
      "warned",
      "-n",
      "checked",
      "--from-literal=warn=1",
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("Warning: warn is deprecated");
  });

  it("tells the webhook about a dry run and stores nothing", async () => {
    await kubectl.ok([
      "create",
      "configmap",
      "dry",
      "-n",
      "checked",
      "--from-literal=a=1",
      "--dry-run=server",
    ]);
    expect(seen.findLast((s) => s.name === "dry")?.dryRun).toBe(true);
    await kubectl.fails(["get", "configmap", "dry", "-n", "checked"]);
  });

  it("calls no webhook outside the namespaceSelector or for an object the objectSelector leaves out", async () => {
    await kubectl.ok([
      "create",
      "configmap",
      "free",
      "-n",
      "unchecked",
      "--from-literal=forbidden=1",
    ]);
    const free = JSON.parse(
      await kubectl.ok(["get", "configmap", "free", "-n", "unchecked", "-o", "json"]),
    ) as ConfigMap;
    expect(free.metadata.labels).toBeUndefined();
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: ConfigMap
metadata: {name: skipped, namespace: checked, labels: {skip: "yes"}}
data: {forbidden: "1"}
`,
    });
    expect(seen.some((s) => s.name === "free" || s.name === "skipped")).toBe(false);
  });

  it("admits a DELETE with the stored object", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: ConfigMap
metadata: {name: keep, namespace: checked, labels: {protected: "true"}}
`,
    });
    const r = await kubectl.fails(["delete", "configmap", "keep", "-n", "checked"]);
    expect(r.stderr).toContain(
      'admission webhook "deny.example.com" denied the request: this one is protected',
    );
    const req = seen.findLast((s) => s.name === "keep" && s.operation === "DELETE");
    expect(req?.object).toBeNull();
    expect(req?.oldObject?.metadata.labels?.protected).toBe("true");
    await kubectl.ok(["label", "configmap", "keep", "-n", "checked", "protected-"]);
    await kubectl.ok(["delete", "configmap", "keep", "-n", "checked"]);
  });

  it("fails closed on an unreachable webhook under Fail, and passes under Ignore", async () => {
    const config = (policy: string) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: gone}
webhooks:
- name: gone.example.com
  clientConfig: {url: "https://127.0.0.1:1/validate", caBundle: ${caBundle}}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [secrets]}
  failurePolicy: ${policy}
  sideEffects: None
  admissionReviewVersions: [v1]
`;
    await kubectl.ok(["apply", "-f", "-"], { input: config("Fail") });
    const r = await kubectl.fails(["create", "secret", "generic", "s1", "-n", "unchecked"]);
    expect(r.stderr).toContain(
      'Internal error occurred: failed calling webhook "gone.example.com": failed to call webhook: Post "https://127.0.0.1:1/validate?timeout=10s": connect ECONNREFUSED 127.0.0.1:1',
    );
    await kubectl.ok(["apply", "-f", "-"], { input: config("Ignore") });
    await kubectl.ok(["create", "secret", "generic", "s2", "-n", "unchecked"]);
    await kubectl.ok(["delete", "validatingwebhookconfiguration", "gone"]);
  });

  it("calls a webhook only when all its matchConditions hold, and applies failurePolicy to one that errors", async () => {
    // The /validate webhook refuses data key "forbidden"; its conditions skip what they leave out.
    const config = (
      conditions: string,
      policy = "Fail",
    ) => `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: conditional}
webhooks:
- name: conditional.example.com
  clientConfig: {url: "${hooks.url("/validate")}", caBundle: ${caBundle}}
  rules:
  - {operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  failurePolicy: ${policy}
  sideEffects: None
  admissionReviewVersions: [v1]
  matchConditions:
${conditions}
`;
    await kubectl.ok(["apply", "-f", "-"], {
      input: config(`  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  - name: creates-only
    expression: "request.operation == 'CREATE'"`),
    });
    const denied = await kubectl.fails([
      "create",
      "configmap",
      "mc-1",
      "-n",
      "unchecked",
      "--from-literal=forbidden=1",
    ]);
    expect(denied.stderr).toContain(
      'admission webhook "conditional.example.com" denied the request: key forbidden is not allowed',
    );
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: ConfigMap
metadata: {name: mc-2, namespace: unchecked, labels: {exempt: "yes"}}
data: {forbidden: "1"}
`,
    });
    expect(seen.some((r) => r.name === "mc-2")).toBe(false);
    // An update is not a create: the webhook is not called.
    await kubectl.ok([
      "patch",
      "configmap",
      "mc-2",
      "-n",
      "unchecked",
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/labels"}]',
    ]);
    expect(seen.some((r) => r.name === "mc-2")).toBe(false);
    // A condition that cannot be evaluated fails the write closed under Fail...
    const erroring = `  - name: reads-a-missing-key
    expression: "object.data.nothing == 'x'"`;
    await kubectl.ok(["apply", "-f", "-"], { input: config(erroring) });
    const closed = await kubectl.fails(["create", "configmap", "mc-3", "-n", "unchecked"]);
    expect(closed.stderr).toContain(
      "Internal error occurred: failed calling webhook \"conditional.example.com\": failed evaluating match conditions, failing closed: expression 'reads-a-missing-key' resulted in error:",
    );
    // ...and skips the webhook under Ignore.
    await kubectl.ok(["apply", "-f", "-"], { input: config(erroring, "Ignore") });
    await kubectl.ok([
      "create",
      "configmap",
      "mc-4",
      "-n",
      "unchecked",
      "--from-literal=forbidden=1",
    ]);
    await kubectl.ok(["delete", "validatingwebhookconfiguration", "conditional"]);
  });

  it("refuses matchConditions that do not compile to a bool, or repeat a name", async () => {
    const r = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad-conditions}
webhooks:
- name: bad.example.com
  clientConfig: {url: "https://127.0.0.1:1/x", caBundle: ${caBundle}}
  sideEffects: None
  admissionReviewVersions: [v1]
  matchConditions:
  - {name: syntax, expression: "object.metadata.name =="}
  - {name: text, expression: "'not a bool'"}
  - {name: text, expression: "true"}
  - {name: "-bad-", expression: "true"}
`,
    });
    expect(r.stderr).toContain(
      'webhooks[0].matchConditions[0].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:',
    );
    expect(r.stderr).toContain(
      `webhooks[0].matchConditions[1].expression: Invalid value: "'not a bool'": must evaluate to bool`,
    );
    expect(r.stderr).toContain('webhooks[0].matchConditions[2].name: Duplicate value: "text"');
    expect(r.stderr).toContain(
      'webhooks[0].matchConditions[3].name: Invalid value: "-bad-": name part must consist of',
    );
  });

  it("gives up on a webhook after its timeout", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: slow}
webhooks:
- name: slow.example.com
  clientConfig: {url: "${hooks.url("/slow")}", caBundle: ${caBundle}}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [serviceaccounts]}
  timeoutSeconds: 1
  sideEffects: None
  admissionReviewVersions: [v1]
`,
    });
    const r = await kubectl.fails(["create", "serviceaccount", "late", "-n", "unchecked"]);
    expect(r.stderr).toContain(
      `failed calling webhook "slow.example.com": failed to call webhook: Post "${hooks.url("/slow")}?timeout=1s": context deadline exceeded`,
    );
    await kubectl.ok(["delete", "validatingwebhookconfiguration", "slow"]);
  });

  it("calls a webhook through its Service's endpoints, verifying the Service's name", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: webhooks}
---
apiVersion: v1
kind: Service
metadata: {name: hooks, namespace: webhooks}
spec:
  ports: [{name: https, port: 443, targetPort: ${hooks.port}}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: hooks, namespace: webhooks}
subsets:
- addresses: [{ip: 127.0.0.1}]
  ports: [{name: https, port: ${hooks.port}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: by-service}
webhooks:
- name: service.example.com
  clientConfig:
    service: {namespace: webhooks, name: hooks, path: /validate}
    caBundle: ${caBundle}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: webhooks}}
  sideEffects: None
  admissionReviewVersions: [v1]
`,
    });
    const r = await kubectl.fails([
      "create",
      "configmap",
      "via-service",
      "-n",
      "webhooks",
      "--from-literal=forbidden=1",
    ]);
    expect(r.stderr).toContain(
      'admission webhook "service.example.com" denied the request: key forbidden is not allowed',
    );
    await kubectl.ok(["delete", "validatingwebhookconfiguration", "by-service"]);
  });
});
