/**
 * ValidatingAdmissionPolicies through the real apiserver and the real kubectl: a
 * policy and its binding refuse a Deployment with too many replicas in
 * Kubernetes' words; Warn reaches kubectl as a warning; Audit and
 * auditAnnotations reach the audit log; a ConfigMap as the param (by name and by
 * selector, parameterNotFoundAction); namespaceSelector, matchConditions,
 * variables and messageExpression; a compile error refuses the policy; an
 * expression that fails at run time follows failurePolicy; deleting the binding
 * stops enforcement; a misspelt field is reported in the policy's status
 * (type checking); the `authorizer` variable asks the server's authorizers
 * (group/resource/namespace/name checks, requestResource, serviceAccount, path);
 * the types are defaulted, validated and listed as Kubernetes does.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/apiserver/audit/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
  verbs: [create, update, patch]
  resources: [{group: "", resources: [configmaps]}, {group: apps, resources: [deployments]}]
- level: None
`;

let dir: string;
let logPath: string;
let srv: TestServer;
let kubectl: Kubectl;

function deployment(name: string, replicas: number, namespace = "default"): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec:
      containers: [{name: c, image: busybox}]
`;
}

/** Applies `yaml` until it is refused (the binding reaches the server's cache), answering stderr. */
async function refused(yaml: string): Promise<string> {
  return eventually(async () => {
    const r = await kubectl.run(["apply", "-f", "-"], { input: yaml });
    return r.code !== 0 ? r.stderr : undefined;
  }, "the write to be refused");
}

interface AuditEvent {
  verb: string;
  stage: string;
  objectRef?: { name?: string; resource?: string };
  annotations?: Record<string, string>;
}

async function auditEventFor(resource: string, name: string): Promise<AuditEvent> {
  return eventually(async () => {
    const text = await readFile(logPath, "utf8").catch(() => "");
    return text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AuditEvent)
      .find(
        (e) =>
          e.stage === "ResponseComplete" &&
          e.objectRef?.resource === resource &&
          e.objectRef?.name === name,
      );
  }, `the audit event of ${resource}/${name}`);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "setpoint-vap-"));
  logPath = join(dir, "audit.log");
  srv = await startTestServer({ audit: { policy: parsePolicy(AUDIT_POLICY), path: logPath } });
  kubectl = new Kubectl(srv.kubeconfigPath);
}, 60_000);

afterAll(async () => {
  await kubectl?.close();
  await srv?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("ValidatingAdmissionPolicy", () => {
  it("refuses a Deployment with more than 5 replicas in Kubernetes' words, until the binding is deleted", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas-binding}
spec:
  policyName: max-replicas
  validationActions: [Deny]
`,
    });
    const stderr = await refused(deployment("big", 6));
    expect(stderr.trim()).toBe(
      `The deployments "big" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5`,
    );
    await kubectl.ok(["apply", "-f", "-"], { input: deployment("small", 5) });
    // An update past the limit is refused too; the scale subresource is another resource
    // (deployments/scale), which the rule does not name.
    const r = await kubectl.fails([
      "patch",
      "deployment",
      "small",
      "--type=merge",
      "-p",
      '{"spec":{"replicas":7}}',
    ]);
    expect(r.stderr).toContain("denied request: failed expression: object.spec.replicas <= 5");
    await kubectl.ok(["scale", "deployment", "small", "--replicas=7"]);

    const policy = JSON.parse(
      await kubectl.ok(["get", "validatingadmissionpolicy", "max-replicas", "-o", "json"]),
    );
    expect(policy.spec.failurePolicy).toBe("Fail");
    expect(policy.spec.matchConstraints).toMatchObject({
      matchPolicy: "Equivalent",
      namespaceSelector: {},
      objectSelector: {},
    });
    expect(policy.spec.matchConstraints.resourceRules[0].scope).toBe("*");
    const table = await kubectl.ok(["get", "validatingadmissionpolicies"]);
    expect(table.split("\n")[0]).toMatch(/^NAME\s+VALIDATIONS\s+PARAMKIND\s+AGE$/);
    expect(table).toMatch(/^max-replicas\s+1\s+<unset>\s+\d+s$/m);
    const bindings = await kubectl.ok(["get", "validatingadmissionpolicybindings"]);
    expect(bindings.split("\n")[0]).toMatch(/^NAME\s+POLICYNAME\s+PARAMREF\s+AGE$/);
    expect(bindings).toMatch(/^max-replicas-binding\s+max-replicas\s+<unset>\s+\d+s$/m);

    await kubectl.ok(["delete", "validatingadmissionpolicybinding", "max-replicas-binding"]);
    await eventually(async () => {
      const r = await kubectl.run(["apply", "-f", "-"], { input: deployment("big", 6) });
      return r.code === 0;
    }, "the Deployment to be admitted once the binding is gone");
  });

  it("warns with Warn and annotates the audit event with Audit and auditAnnotations", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: labelled}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {policy: warn}}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: every ConfigMap names its team
  auditAnnotations:
  - key: keys
    valueExpression: "string(size(object.data))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: labelled-warn}
spec:
  policyName: labelled
  validationActions: [Warn, Audit]
---
apiVersion: v1
kind: Namespace
metadata: {name: warned, labels: {policy: warn}}
`,
    });
    const out = await eventually(async () => {
      const name = `w${Date.now()}`;
      const r = await kubectl.run([
        "create",
        "configmap",
        name,
        "-n",
        "warned",
        "--from-literal=a=1",
      ]);
      expect(r.code).toBe(0);
      return r.stderr.includes("Warning:") ? { name, stderr: r.stderr } : undefined;
    }, "the warning");
    expect(out.stderr).toContain(
      "Warning: Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-warn': every ConfigMap names its team",
    );
    const ev = await auditEventFor("configmaps", out.name);
    expect(ev.annotations?.["labelled/keys"]).toBe("1");
    expect(
      JSON.parse(ev.annotations?.["validation.policy.admission.k8s.io/validation_failure"] ?? "[]"),
    ).toEqual([
      {
        message: "every ConfigMap names its team",
        policy: "labelled",
        binding: "labelled-warn",
        expressionIndex: 0,
        validationActions: ["Audit"],
      },
    ]);
    // Outside the selected namespace nothing is said.
    const quiet = await kubectl.run(["create", "configmap", "quiet", "--from-literal=a=1"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).not.toContain("Warning:");
  });

  it("reads a ConfigMap param, with messageExpression, variables and matchConditions", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: limited}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  matchConditions:
  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  variables:
  - name: limit
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: "'replicas ' + string(object.spec.replicas) + ' exceed the limit of ' + string(variables.limit)"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit-binding}
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits, namespace: limited}
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: limited}}
`,
    });
    const binding = JSON.parse(
      await kubectl.ok([
        "get",
        "validatingadmissionpolicybinding",
        "replica-limit-binding",
        "-o",
        "json",
      ]),
    );
    expect(binding.spec.paramRef.parameterNotFoundAction).toBe("Deny");
    const bindings = await kubectl.ok(["get", "validatingadmissionpolicybindings"]);
    expect(bindings).toMatch(/^replica-limit-binding\s+replica-limit\s+limited\/limits\s+\d+s$/m);

    // No param yet: parameterNotFoundAction Deny refuses.
    const missing = await refused(deployment("one", 1, "limited"));
    expect(missing).toContain(
      "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
    );
    await kubectl.ok([
      "create",
      "configmap",
      "limits",
      "-n",
      "limited",
      "--from-literal=maxReplicas=3",
    ]);
    await eventually(async () => {
      const r = await kubectl.run(["apply", "-f", "-"], { input: deployment("one", 1, "limited") });
      return r.code === 0;
    }, "the Deployment to be admitted once the param exists");
    const r = await kubectl.fails(["apply", "-f", "-"], {
      input: deployment("four", 4, "limited"),
    });
    // reason Forbidden: 403, in kubectl's words for it.
    expect(r.stderr).toContain("Error from server (Forbidden)");
    expect(r.stderr).toContain(
      `deployments.apps "four" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas 4 exceed the limit of 3`,
    );
    // The matchCondition exempts a labelled Deployment.
    await kubectl.ok(["apply", "-f", "-"], {
      input: deployment("four", 4, "limited").replace(
        "metadata: {name: four, namespace: limited}",
        "metadata: {name: four, namespace: limited, labels: {exempt: 'yes'}}",
      ),
    });
    // Outside the binding's namespaces the policy does not apply.
    await kubectl.ok(["apply", "-f", "-"], { input: deployment("four", 4, "default") });
  });

  it("evaluates once per param a selector picks, and allows with none under Allow", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: selected}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: forbidden-keys}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps], resourceNames: [checked]}
  validations:
  - expression: "!has(object.data) || !(params.data.key in object.data)"
    messageExpression: "'key ' + params.data.key + ' is forbidden'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: forbidden-keys}
spec:
  policyName: forbidden-keys
  validationActions: [Deny]
  paramRef:
    selector: {matchLabels: {forbidden-key: "yes"}}
    parameterNotFoundAction: Allow
`,
    });
    expect(await kubectl.ok(["get", "validatingadmissionpolicybinding", "forbidden-keys"])).toMatch(
      /^forbidden-keys\s+forbidden-keys\s+forbidden-key=yes\s+\d+s$/m,
    );
    // No params: Allow admits.
    await kubectl.ok(["create", "configmap", "checked", "-n", "selected", "--from-literal=x=1"]);
    await kubectl.ok(["delete", "configmap", "checked", "-n", "selected"]);
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: ConfigMap
metadata: {name: p1, namespace: selected, labels: {forbidden-key: "yes"}}
data: {key: "x"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: p2, namespace: selected, labels: {forbidden-key: "yes"}}
data: {key: "y"}
`,
    });
    const r = await refused(`apiVersion: v1
kind: ConfigMap
metadata: {name: checked, namespace: selected}
data: {"y": "1"}
`);
    expect(r).toContain("denied request: key y is forbidden");
    // resourceNames: another name is not checked.
    await kubectl.ok(["create", "configmap", "other", "-n", "selected", "--from-literal=y=1"]);
  });

  it("refuses a policy whose expression does not compile, and follows failurePolicy for run-time errors", async () => {
    const bad = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "object.data.x =="
  - expression: "params.x"
`,
    });
    expect(bad.stderr).toContain(
      `spec.validations[0].expression: Invalid value: "object.data.x ==": compilation failed: ERROR: <input>:1:`,
    );
    expect(bad.stderr).toContain('spec.validations[1].expression: Invalid value: "params.x"');

    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: failing}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: runtime-error}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: failing}}
  validations:
  - expression: "object.data.missing == 'x'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: runtime-error}
spec:
  policyName: runtime-error
  validationActions: [Deny]
`,
    });
    const failed = await refused(`apiVersion: v1
kind: ConfigMap
metadata: {name: c1, namespace: failing}
data: {a: "1"}
`);
    expect(failed).toContain(
      "ValidatingAdmissionPolicy 'runtime-error' with binding 'runtime-error' denied request: expression 'object.data.missing == 'x'' resulted in error: ",
    );
    await kubectl.ok([
      "patch",
      "validatingadmissionpolicy",
      "runtime-error",
      "--type=merge",
      "-p",
      '{"spec":{"failurePolicy":"Ignore"}}',
    ]);
    await eventually(async () => {
      const r = await kubectl.run([
        "create",
        "configmap",
        "c1",
        "-n",
        "failing",
        "--from-literal=a=1",
      ]);
      return r.code === 0;
    }, "the ConfigMap to be admitted under failurePolicy Ignore");
  });

  it("reports type checking in the policy's status, and a field it names fails under failurePolicy", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: typed}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: typed}}
  validations:
  - expression: "object.spec.replicaz <= 5"
  - expression: "object.spec.replicas <= 50"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: typo}
spec: {policyName: typo, validationActions: [Deny]}
`,
    });
    const status = await eventually(async () => {
      const p = JSON.parse(
        await kubectl.ok(["get", "validatingadmissionpolicy", "typo", "-o", "json"]),
      );
      return p.status?.observedGeneration === p.metadata.generation ? p.status : undefined;
    }, "the policy's status");
    expect(status.typeChecking.expressionWarnings).toEqual([
      {
        fieldRef: "spec.validations[0].expression",
        warning:
          "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicaz'\n | object.spec.replicaz <= 5\n | ...........^",
      },
    ]);
    const clean = await eventually(async () => {
      const p = JSON.parse(
        await kubectl.ok(["get", "validatingadmissionpolicy", "max-replicas", "-o", "json"]),
      );
      return p.status?.observedGeneration === p.metadata.generation ? p.status : undefined;
    }, "a clean policy's status");
    expect(clean.typeChecking).toEqual({});
    const r = await refused(deployment("typo", 1, "typed"));
    expect(r).toContain(
      "ValidatingAdmissionPolicy 'typo' with binding 'typo' denied request: expression 'object.spec.replicaz <= 5' resulted in error: ",
    );
  });

  it("asks the server's authorizers through the authorizer variable", async () => {
    await kubectl.ok(["apply", "-f", "-"], {
      input: `apiVersion: v1
kind: Namespace
metadata: {name: authz}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder, namespace: authz}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-writer, namespace: authz}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: vault-reader, namespace: authz}
rules: [{apiGroups: [""], resources: [secrets], resourceNames: [vault], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-writers, namespace: authz}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: builder-writes, namespace: authz}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}
subjects: [{kind: ServiceAccount, name: builder, namespace: authz}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: vault-readers, namespace: authz}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: vault-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vault-keepers}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: authz}}
  variables:
  - name: vault
    expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).name('vault').check('get')"
  validations:
  - expression: "variables.vault.allowed()"
    messageExpression: "'only those who may read the vault: ' + request.userInfo.username + ' may not'"
  - expression: "authorizer.requestResource.check('create').allowed() && !authorizer.requestResource.check('delete').allowed()"
    message: "the request's own resource is checked"
  - expression: "authorizer.serviceAccount(object.metadata.namespace, 'builder').group('').resource('configmaps').namespace(object.metadata.namespace).check('create').allowed()"
    message: "the builder ServiceAccount may not write ConfigMaps here"
  - expression: "authorizer.path('/healthz').check('get').allowed() && !authorizer.path('/metrics').check('get').allowed()"
    message: "non-resource paths are checked"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vault-keepers-binding}
spec:
  policyName: vault-keepers
  validationActions: [Deny]
`,
    });
    const cm = (name: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: ${name}, namespace: authz}
data: {k: v}
`;
    const bob = await eventually(async () => {
      const r = await kubectl.run(["create", "-f", "-", "--as", "bob"], { input: cm("bobs") });
      return r.code !== 0 && r.stderr.includes("ValidatingAdmissionPolicy") ? r.stderr : undefined;
    }, "bob's ConfigMap refused by the policy");
    expect(bob).toContain(
      "ValidatingAdmissionPolicy 'vault-keepers' with binding 'vault-keepers-binding' denied request: only those who may read the vault: bob may not",
    );
    await kubectl.ok(["create", "-f", "-", "--as", "alice"], { input: cm("alices") });
    // The ServiceAccount's own rights count, not the requester's.
    await kubectl.ok(["delete", "rolebinding", "builder-writes", "-n", "authz"]);
    const again = await eventually(async () => {
      const r = await kubectl.run(["create", "-f", "-", "--as", "alice"], { input: cm("again") });
      return r.code !== 0 ? r.stderr : undefined;
    }, "alice's ConfigMap refused once the builder lost its binding");
    expect(again).toContain(
      "denied request: the builder ServiceAccount may not write ConfigMaps here",
    );
    await kubectl.ok(["delete", "validatingadmissionpolicybinding", "vault-keepers-binding"]);
  });

  it("validates bindings with Kubernetes' messages", async () => {
    const r = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad}
spec:
  validationActions: [Deny, Warn, Deny]
  paramRef: {name: a, selector: {}}
`,
    });
    expect(r.stderr).toContain("spec.policyName: Required value");
    expect(r.stderr).toContain('spec.validationActions[2]: Duplicate value: "Deny"');
    expect(r.stderr).toContain(
      "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
    );
    expect(r.stderr).toContain(
      "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
    );
    const none = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: bad}
spec: {policyName: p}
`,
    });
    expect(none.stderr).toContain(
      "spec.validationActions: Required value: at least one validation action is required",
    );
    const empty = await kubectl.fails(["apply", "-f", "-"], {
      input: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: empty}
spec: {}
`,
    });
    expect(empty.stderr).toContain("spec.matchConstraints: Required value");
    expect(empty.stderr).toContain(
      "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
    );
  });
});
