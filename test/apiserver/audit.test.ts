/**
 * The audit log over real HTTP and the real kubectl: a policy (Secrets at
 * Metadata, ConfigMaps at RequestResponse without managed fields, ServiceAccounts at
 * Request, `get` of
 * Namespaces at None, the server's own requests at None, RequestReceived omitted
 * everywhere) decides which requests leave which `audit.k8s.io/v1` Events in the
 * file, with the user, the impersonated user, the object reference, the response
 * status, the authorization decision and (only at the levels that ask for them) the
 * request and response objects; no Secret data is ever written. A second server
 * with a tiny size limit shows the file rotated as kube-apiserver rotates it.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AuditAttributes,
  evaluatePolicy,
  PolicyError,
  parsePolicy,
} from "../../src/apiserver/audit/index.ts";
import { parseAuditFlags } from "../../src/cli/up.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:apiserver"]
- level: None
  verbs: [get]
  resources: [{group: "", resources: [namespaces]}]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  omitManagedFields: true
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
  nonResourceURLs: [/version, /healthz*]
- level: Request
  resources: [{group: "", resources: [serviceaccounts]}]
- level: None
`;

const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
const SA = "system:serviceaccount:default:viewer";
/** The ServiceAccount's groups as authentication gives them, and as impersonation does. */
const SA_AUTHENTICATED = ["system:serviceaccounts", "system:serviceaccounts:default"];
const SA_GROUPS = [...SA_AUTHENTICATED, "system:authenticated"];

interface AuditEvent {
  kind: string;
  apiVersion: string;
  level: string;
  auditID: string;
  stage: string;
  requestURI: string;
  verb: string;
  user: { username?: string; groups?: string[] };
  impersonatedUser?: { username: string; groups: string[] };
  sourceIPs: string[];
  userAgent?: string;
  objectRef?: Record<string, string>;
  responseStatus?: Record<string, unknown>;
  requestObject?: Record<string, unknown> & { data?: Record<string, string> };
  responseObject?: Record<string, unknown> & { data?: Record<string, string> };
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(
  srv: TestServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = https.request(new URL(path, srv.url), {
      method,
      ca: srv.caCert,
      headers: { "user-agent": "audit-test/1.0", ...headers },
    });
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c) => {
        text += c;
      });
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

async function readEvents(path: string): Promise<AuditEvent[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent);
}

/** The events of one request, once its last stage is in the file. */
async function eventsOf(
  path: string,
  auditID: string,
  last = "ResponseComplete",
): Promise<AuditEvent[]> {
  return eventually(async () => {
    const evs = (await readEvents(path)).filter((e) => e.auditID === auditID);
    return evs.some((e) => e.stage === last) ? evs : undefined;
  }, `audit events of ${auditID}`);
}

/** The events of the one request matching `match`, once its last stage is in the file. */
async function eventsWhere(
  path: string,
  match: (e: AuditEvent) => boolean,
  last = "ResponseComplete",
): Promise<AuditEvent[]> {
  const ids = await eventually(async () => {
    const evs = (await readEvents(path)).filter(match);
    const done = evs.filter((e) => e.stage === last);
    return done.length > 0 ? [...new Set(evs.map((e) => e.auditID))] : undefined;
  }, "a matching audit event");
  expect(ids).toHaveLength(1);
  return eventsOf(path, ids[0]!, last);
}

function common(e: AuditEvent) {
  expect(e.kind).toBe("Event");
  expect(e.apiVersion).toBe("audit.k8s.io/v1");
  expect(e.sourceIPs).toEqual(["127.0.0.1"]);
  expect(e.requestReceivedTimestamp).toMatch(TIME);
  expect(e.stageTimestamp).toMatch(TIME);
  expect(e.stageTimestamp >= e.requestReceivedTimestamp).toBe(true);
}

describe("the audit log", () => {
  let dir: string;
  let logPath: string;
  let srv: TestServer;
  let admin: Kubectl;
  let viewerToken: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "setpoint-audit-"));
    logPath = join(dir, "logs", "audit.log");
    srv = await startTestServer({
      tls: true,
      audit: { policy: parsePolicy(POLICY), path: logPath },
    });
    admin = new Kubectl(srv.kubeconfigPath);
    await admin.ok(["create", "serviceaccount", "viewer", "-n", "default"]);
    await admin.ok([
      "create",
      "rolebinding",
      "viewer-view",
      "-n",
      "default",
      "--clusterrole=view",
      `--serviceaccount=default:viewer`,
    ]);
    viewerToken = (await admin.ok(["create", "token", "viewer", "-n", "default"])).trim();
  });

  afterAll(async () => {
    await admin?.close();
    await srv?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("logs a Secret's create and get at Metadata, without its data", async () => {
    await admin.ok([
      "create",
      "secret",
      "generic",
      "s1",
      "-n",
      "default",
      "--from-literal=password=hunter2",
    ]);
    const created = await eventsWhere(
      logPath,
      (e) => e.verb === "create" && e.objectRef?.resource === "secrets",
    );
    expect(created.map((e) => e.stage)).toEqual(["ResponseComplete"]);
    const ev = created[0]!;
    common(ev);
    expect(ev).toEqual({
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Metadata",
      auditID: expect.any(String),
      stage: "ResponseComplete",
      requestURI: expect.stringMatching(/^\/api\/v1\/namespaces\/default\/secrets\?/),
      verb: "create",
      user: { username: "admin", groups: expect.arrayContaining(["system:masters"]) },
      sourceIPs: ["127.0.0.1"],
      userAgent: expect.stringMatching(/^kubectl\//),
      objectRef: { resource: "secrets", namespace: "default", name: "s1", apiVersion: "v1" },
      responseStatus: { metadata: {}, code: 201 },
      requestReceivedTimestamp: expect.stringMatching(TIME),
      stageTimestamp: expect.stringMatching(TIME),
      annotations: { "authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "" },
    });

    await admin.ok(["get", "secret", "s1", "-n", "default", "-o", "yaml"]);
    const got = await eventsWhere(
      logPath,
      (e) => e.verb === "get" && e.objectRef?.resource === "secrets" && e.user.username === "admin",
    );
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({
      level: "Metadata",
      requestURI: "/api/v1/namespaces/default/secrets/s1",
      objectRef: { resource: "secrets", namespace: "default", name: "s1", apiVersion: "v1" },
      responseStatus: { metadata: {}, code: 200 },
    });
    expect(got[0]).not.toHaveProperty("requestObject");
    expect(got[0]).not.toHaveProperty("responseObject");
  });

  it("logs a ConfigMap's create at RequestResponse with both objects, without managed fields", async () => {
    await admin.ok(["create", "configmap", "cm1", "-n", "default", "--from-literal=k=v"]);
    const evs = await eventsWhere(
      logPath,
      (e) => e.verb === "create" && e.objectRef?.resource === "configmaps",
    );
    expect(evs.map((e) => e.stage)).toEqual(["ResponseComplete"]);
    const ev = evs[0]!;
    common(ev);
    expect(ev.level).toBe("RequestResponse");
    expect(ev.objectRef).toEqual({
      resource: "configmaps",
      namespace: "default",
      name: "cm1",
      apiVersion: "v1",
    });
    expect(ev.responseStatus).toEqual({ metadata: {}, code: 201 });
    expect(ev.requestObject).toMatchObject({
      kind: "ConfigMap",
      apiVersion: "v1",
      metadata: { name: "cm1" },
      data: { k: "v" },
    });
    expect(ev.responseObject).toMatchObject({
      kind: "ConfigMap",
      metadata: { name: "cm1", namespace: "default", uid: expect.any(String) },
      data: { k: "v" },
    });
    expect(ev.responseObject?.metadata).not.toHaveProperty("managedFields");

    // A patch's requestObject is the patch as sent.
    await admin.ok([
      "patch",
      "configmap",
      "cm1",
      "-n",
      "default",
      "--type=merge",
      "-p",
      '{"data":{"k":"w"}}',
    ]);
    const [patched] = await eventsWhere(logPath, (e) => e.verb === "patch");
    expect(patched!.requestObject).toEqual({ data: { k: "w" } });
    expect(patched!.objectRef).toEqual({
      resource: "configmaps",
      namespace: "default",
      name: "cm1",
      apiVersion: "v1",
    });
    expect(patched!.responseObject).toMatchObject({ kind: "ConfigMap", data: { k: "w" } });
  });

  it("logs the request object at Request, not the response", async () => {
    const [ev] = await eventsWhere(
      logPath,
      (e) => e.verb === "create" && e.objectRef?.resource === "serviceaccounts",
    );
    common(ev!);
    expect(ev!.level).toBe("Request");
    expect(ev!.objectRef).toEqual({
      resource: "serviceaccounts",
      namespace: "default",
      name: "viewer",
      apiVersion: "v1",
    });
    expect(ev!.requestObject).toMatchObject({
      kind: "ServiceAccount",
      metadata: { name: "viewer" },
    });
    expect(ev).not.toHaveProperty("responseObject");
    expect(ev!.responseStatus).toEqual({ metadata: {}, code: 201 });
  });

  it("answers with the Audit-Id of the events; a watch has ResponseStarted; get of a Namespace is not logged", async () => {
    const ns = await send(srv, "GET", "/api/v1/namespaces/default", {
      authorization: `Bearer ${srv.token}`,
    });
    expect(ns.status).toBe(200);
    const nsId = ns.headers["audit-id"] as string;
    expect(nsId).toMatch(/^[0-9a-f-]{36}$/);

    const watch = await send(
      srv,
      "GET",
      "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
      { authorization: `Bearer ${srv.token}` },
    );
    expect(watch.status).toBe(200);
    const id = watch.headers["audit-id"] as string;
    const evs = await eventsOf(logPath, id);
    expect(evs.map((e) => e.stage)).toEqual(["ResponseStarted", "ResponseComplete"]);
    for (const e of evs) {
      common(e);
      expect(e).toMatchObject({
        level: "RequestResponse",
        verb: "watch",
        userAgent: "audit-test/1.0",
        objectRef: { resource: "configmaps", namespace: "default", apiVersion: "v1" },
        responseStatus: { metadata: {}, code: 200 },
      });
      expect(e).not.toHaveProperty("responseObject");
    }
    expect(evs[0]!.requestReceivedTimestamp).toBe(evs[1]!.requestReceivedTimestamp);
    // The namespace get (before the watch, so written before it) left nothing.
    expect((await readEvents(logPath)).filter((e) => e.auditID === nsId)).toEqual([]);
    // A client's own Audit-ID is kept.
    const mine = await send(srv, "GET", "/api/v1/namespaces/default/configmaps/cm1", {
      authorization: `Bearer ${srv.token}`,
      "audit-id": "my-audit-id",
    });
    expect(mine.headers["audit-id"]).toBe("my-audit-id");
    const [ev] = await eventsOf(logPath, "my-audit-id");
    expect(ev).toMatchObject({ verb: "get", responseObject: { metadata: { name: "cm1" } } });
  });

  it("logs a 403 with the Status, the decision, and no Secret data", async () => {
    const res = await send(srv, "GET", "/api/v1/namespaces/default/secrets/s1", {
      authorization: `Bearer ${viewerToken}`,
    });
    expect(res.status).toBe(403);
    const { status, message, reason, details, code } = JSON.parse(res.body);
    expect(message).toBe(
      `secrets "s1" is forbidden: User "${SA}" cannot get resource "secrets" in API group "" in the namespace "default"`,
    );
    const evs = await eventsOf(logPath, res.headers["audit-id"] as string);
    expect(evs).toHaveLength(1);
    const ev = evs[0]!;
    common(ev);
    expect(ev).toEqual({
      kind: "Event",
      apiVersion: "audit.k8s.io/v1",
      level: "Metadata",
      auditID: res.headers["audit-id"],
      stage: "ResponseComplete",
      requestURI: "/api/v1/namespaces/default/secrets/s1",
      verb: "get",
      // The token's id in extra, as kube-apiserver logs a ServiceAccount token's user.
      user: {
        username: SA,
        uid: expect.any(String),
        groups: SA_AUTHENTICATED,
        extra: {
          "authentication.kubernetes.io/credential-id": [
            `JTI=${JSON.parse(Buffer.from(viewerToken.split(".")[1]!, "base64url").toString()).jti}`,
          ],
        },
      },
      sourceIPs: ["127.0.0.1"],
      userAgent: "audit-test/1.0",
      objectRef: { resource: "secrets", namespace: "default", name: "s1", apiVersion: "v1" },
      responseStatus: { metadata: {}, status, message, reason, details, code },
      requestReceivedTimestamp: expect.stringMatching(TIME),
      stageTimestamp: expect.stringMatching(TIME),
      annotations: { "authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": "" },
    });
  });

  it("logs an impersonated request with the caller as user and the impersonated user", async () => {
    await admin.ok(["get", "configmap", "cm1", "-n", "default", `--as=${SA}`]);
    const evs = await eventsWhere(
      logPath,
      (e) => e.impersonatedUser !== undefined && e.objectRef?.resource === "configmaps",
    );
    expect(evs).toHaveLength(1);
    const ev = evs[0]!;
    common(ev);
    expect(ev.user.username).toBe("admin");
    expect(ev.impersonatedUser).toEqual({ username: SA, groups: SA_GROUPS });
    expect(ev.verb).toBe("get");
    expect(ev.responseStatus).toEqual({ metadata: {}, code: 200 });
    expect(ev.annotations).toEqual({
      "authorization.k8s.io/decision": "allow",
      "authorization.k8s.io/reason": `RBAC: allowed by RoleBinding "viewer-view/default" of ClusterRole "view" to ServiceAccount "viewer/default" in namespace "default"`,
    });
  });

  it("logs public paths as anonymous, failed authentication, and never Secret data", async () => {
    const v = await send(srv, "GET", "/version");
    const [ev] = await eventsOf(logPath, v.headers["audit-id"] as string);
    expect(ev).toMatchObject({
      level: "Metadata",
      verb: "get",
      requestURI: "/version",
      user: { username: "system:anonymous", groups: ["system:unauthenticated"] },
      responseStatus: { metadata: {}, code: 200 },
    });
    expect(ev).not.toHaveProperty("objectRef");

    const bad = await send(srv, "GET", "/healthz", {});
    expect(bad.status).toBe(200);
    const refused = await send(srv, "GET", "/api/v1/namespaces/default/secrets", {
      authorization: "Bearer nope",
    });
    expect(refused.status).toBe(401);
    const [failed] = await eventsOf(
      logPath,
      refused.headers["audit-id"] as string,
      "ResponseStarted",
    );
    expect(failed).toMatchObject({
      level: "Metadata",
      stage: "ResponseStarted",
      verb: "list",
      user: {},
      responseStatus: {
        metadata: {},
        message: "Authentication failed, attempted: bearer",
        code: 401,
      },
    });

    await srv.server.close().catch(() => {});
    const text = await readFile(logPath, "utf8");
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain(Buffer.from("hunter2").toString("base64"));
    // Every line is one Event.
    for (const e of await readEvents(logPath)) expect(e.kind).toBe("Event");
  });
});

describe("audit log rotation", () => {
  it("rotates beside the log with the time in the name, keeping maxBackups", async () => {
    const dir = await mkdtemp(join(tmpdir(), "setpoint-audit-rot-"));
    const logPath = join(dir, "audit.log");
    const policy = parsePolicy(
      "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  users: [system:apiserver]\n- level: Metadata\n",
    );
    const srv = await startTestServer({
      tls: true,
      audit: { policy, path: logPath, maxSizeBytes: 4096, maxBackups: 2 },
    });
    let stopped = false;
    try {
      // Both stages of a request, with one audit ID, in the first file.
      const first = await send(srv, "GET", "/api/v1/namespaces", {
        authorization: `Bearer ${srv.token}`,
      });
      const evs = await eventsOf(logPath, first.headers["audit-id"] as string);
      expect(evs.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
      expect(evs[0]).not.toHaveProperty("responseStatus");
      expect(evs[0]).not.toHaveProperty("annotations");
      expect(evs[1]!.annotations?.["authorization.k8s.io/decision"]).toBe("allow");
      for (let i = 0; i < 40; i++) {
        await send(srv, "GET", `/api/v1/namespaces/default/configmaps?n=${i}`, {
          authorization: `Bearer ${srv.token}`,
        });
      }
      // Stopped, the server has written what it queued: the files are final.
      stopped = true;
      await srv.stop();
      const files = (await readdir(dir)).sort();
      expect(files).toHaveLength(3);
      expect(files[2]).toBe("audit.log");
      for (const name of files.slice(0, 2)) {
        expect(name).toMatch(/^audit-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/);
      }
      for (const name of files) {
        const text = await readFile(join(dir, name), "utf8");
        expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
        expect(Buffer.byteLength(text)).toBeGreaterThan(0);
        for (const line of text.split("\n").filter(Boolean)) {
          expect(JSON.parse(line).kind).toBe("Event");
        }
      }
      // The newest backup ends where the log begins: the last request's events are in
      // the log or the newest backup, with nothing lost in between.
      const last = [
        ...(await readEvents(join(dir, files[1]!))),
        ...(await readEvents(logPath)),
      ].filter((e) => e.requestURI.endsWith("?n=39"));
      expect(last.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    } finally {
      if (!stopped) await srv.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("audit policy", () => {
  const MATCHING = parsePolicy(`{
    "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
    "omitStages": ["RequestReceived"], "omitManagedFields": true,
    "rules": [
      {"level": "None", "users": ["system:kube-proxy"], "verbs": ["watch"]},
      {"level": "RequestResponse", "resources": [{"group": "", "resources": ["pods/log"]}]},
      {"level": "Request", "resources": [{"group": "", "resources": ["*/status"]}], "omitManagedFields": false},
      {"level": "Metadata", "resources": [{"group": "apps", "resources": ["deployments/*"]}]},
      {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"], "resourceNames": ["cfg"]}]},
      {"level": "Metadata", "userGroups": ["ops"], "namespaces": ["kube-system", ""]},
      {"level": "Request", "nonResourceURLs": ["/apis*", "/version"], "omitStages": ["ResponseStarted"]},
      {"level": "RequestResponse", "resources": [{"group": "example.com", "resources": ["*"]}]}
    ]
  }`);
  const at = (over: Partial<AuditAttributes>): AuditAttributes => ({
    user: { name: "alice", groups: ["dev"] },
    verb: "get",
    resourceRequest: true,
    path: "/api/v1/namespaces/default/pods/p",
    apiGroup: "",
    resource: "pods",
    subresource: "",
    namespace: "default",
    name: "p",
    ...over,
  });
  const level = (over: Partial<AuditAttributes>) => evaluatePolicy(MATCHING, at(over)).level;

  it("matches rules in order, as kube-apiserver's policy checker does", () => {
    expect(level({ user: { name: "system:kube-proxy", groups: [] }, verb: "watch" })).toBe("None");
    expect(level({ user: { name: "system:kube-proxy", groups: [] }, subresource: "log" })).toBe(
      "RequestResponse",
    );
    expect(level({ subresource: "log" })).toBe("RequestResponse");
    expect(level({})).toBe("None");
    expect(level({ subresource: "status" })).toBe("Request");
    expect(level({ resource: "widgets", apiGroup: "example.com", subresource: "status" })).toBe(
      "RequestResponse",
    );
    expect(level({ apiGroup: "apps", resource: "deployments", subresource: "scale" })).toBe(
      "Metadata",
    );
    // As in Kubernetes, "deployments/*" also matches the resource itself.
    expect(level({ apiGroup: "apps", resource: "deployments" })).toBe("Metadata");
    expect(level({ apiGroup: "apps", resource: "replicasets" })).toBe("None");
    expect(level({ resource: "configmaps", name: "cfg" })).toBe("Request");
    expect(level({ resource: "configmaps", name: "other" })).toBe("None");
    expect(level({ user: { name: "bob", groups: ["ops"] }, namespace: "kube-system" })).toBe(
      "Metadata",
    );
    expect(
      level({ user: { name: "bob", groups: ["ops"] }, resource: "nodes", namespace: "" }),
    ).toBe("Metadata");
    expect(level({ user: { name: "bob", groups: ["ops"] } })).toBe("None");
    const nonResource = { resourceRequest: false, resource: "", namespace: "", name: "" };
    expect(level({ ...nonResource, path: "/apis/apps/v1" })).toBe("Request");
    expect(level({ ...nonResource, path: "/version" })).toBe("Request");
    expect(level({ ...nonResource, path: "/versions" })).toBe("None");
    // A rule with namespaces never matches a non-resource request.
    expect(level({ ...nonResource, user: { name: "bob", groups: ["ops"] }, path: "/x" })).toBe(
      "None",
    );
    expect(level({ user: undefined, apiGroup: "example.com", resource: "things" })).toBe(
      "RequestResponse",
    );
  });

  it("adds the policy's omitted stages to the rule's, and lets a rule override omitManagedFields", () => {
    const nr = evaluatePolicy(
      MATCHING,
      at({ resourceRequest: false, path: "/version", resource: "", name: "", namespace: "" }),
    );
    expect([...nr.omitStages].sort()).toEqual(["RequestReceived", "ResponseStarted"]);
    expect(nr.omitManagedFields).toBe(true);
    expect(evaluatePolicy(MATCHING, at({ subresource: "status" })).omitManagedFields).toBe(false);
    expect([...evaluatePolicy(MATCHING, at({})).omitStages]).toEqual([]);
  });

  it("refuses invalid policies with what is wrong", () => {
    expect(() => parsePolicy("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n")).toThrow(
      "loaded illegal policy with 0 rules",
    );
    expect(() =>
      parsePolicy("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n"),
    ).toThrow(/rules\[0\]\.level: Unsupported value: "Everything"/);
    expect(() =>
      parsePolicy(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: [healthz, /a*b]\n  omitStages: [Later]\n",
      ),
    ).toThrow(PolicyError);
    expect(() =>
      parsePolicy(
        '{"apiVersion":"audit.k8s.io/v1beta1","kind":"Policy","rules":[{"level":"None"}]}',
      ),
    ).toThrow(/apiVersion: must be "audit.k8s.io\/v1"/);
  });

  it("is a usage error of setpoint up", async () => {
    const dir = await mkdtemp(join(tmpdir(), "setpoint-audit-cli-"));
    try {
      const file = join(dir, "policy.yaml");
      await import("node:fs/promises").then((fs) =>
        fs.writeFile(file, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n"),
      );
      await expect(
        parseAuditFlags({ "audit-policy-file": file, "audit-log-path": join(dir, "a.log") }),
      ).rejects.toThrow(/--audit-policy-file: invalid audit policy .*rules\[0\]\.level/);
      await expect(parseAuditFlags({ "audit-log-path": "x.log" })).rejects.toThrow(
        /--audit-log-path needs --audit-policy-file/,
      );
      await expect(
        parseAuditFlags({ "audit-policy-file": file, "audit-log-maxsize": "ten" }),
      ).rejects.toThrow(/--audit-log-maxsize must be a whole number/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
