/**
 * `serviceaccounts/<name>/token` over real HTTPS with token authentication: the
 * TokenRequest in JSON and in the protobuf kubectl sends, its defaults and
 * validation, and the token it returns authenticating as the ServiceAccount until
 * the account is deleted or recreated, or the Pod or Secret it is bound to is gone;
 * a Pod-bound token's user carries Kubernetes' extra (TokenReview and kubectl auth
 * whoami).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ServiceAccountTokens } from "../../src/apiserver/server/index.ts";
import { writeKubeconfig } from "../../src/apiserver/server/kubeconfig-yaml.ts";
import { PROTOBUF_MAGIC } from "../../src/apiserver/wire/index.ts";
import { request } from "../e2e/helpers/http.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { eventually } from "../helpers/poll.ts";
import { startForFile, startTestServer } from "../helpers/test-server.ts";

const srv = startForFile(() => startTestServer({ tls: true }));

const NS = "default";
const SA_PATH = `/api/v1/namespaces/${NS}/serviceaccounts`;
const WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const SERVER_AUDIENCE = "https://kubernetes.default.svc.cluster.local";

interface Reply {
  code: number;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read freely
  body: any;
}

/** One request to the test server, as `token` (default: the admin). */
async function call(
  method: string,
  path: string,
  body?: unknown,
  opts: { token?: string; contentType?: string } = {},
): Promise<Reply> {
  const target = { url: srv.url, ca: srv.caCert, token: opts.token ?? srv.token };
  const r = await request(target, method, path, {
    ...(body !== undefined ? { body } : {}),
    ...(opts.contentType ? { headers: { "Content-Type": opts.contentType } } : {}),
  });
  return { code: r.code, body: r.json ?? r.text };
}

async function createAccount(name: string): Promise<string> {
  const r = await call("POST", SA_PATH, { metadata: { name } });
  expect(r.code, JSON.stringify(r.body)).toBe(201);
  return r.body.metadata.uid;
}

function tokenRequest(spec: Record<string, unknown> = {}): Record<string, unknown> {
  return { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec };
}

function claims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
}

async function whoami(token: string): Promise<Reply> {
  return call(
    "POST",
    WHOAMI,
    { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    { token },
  );
}

/** Waits until `token` authenticates (the watch cache has caught up with the account). */
async function accepted(token: string): Promise<Reply> {
  return eventually(async () => {
    const r = await whoami(token);
    return r.code === 201 ? r : undefined;
  }, "the token to be accepted");
}

/** A length-delimited protobuf field. */
function pbField(n: number, value: string | Uint8Array): Uint8Array {
  const w = protobuf.Writer.create().uint32((n << 3) | 2);
  return (typeof value === "string" ? w.string(value) : w.bytes(value)).finish();
}

/** A Kubernetes protobuf body: magic, then runtime.Unknown{typeMeta, raw}. */
function protobufBody(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const typeMeta = Buffer.concat([pbField(1, apiVersion), pbField(2, kind)]);
  return Buffer.concat([PROTOBUF_MAGIC, pbField(1, typeMeta), pbField(2, raw)]);
}

describe("TokenRequest", () => {
  it("issues a token (201) with the server's audience and an hour by default", async () => {
    const uid = await createAccount("builder");
    const before = Math.floor(Date.now() / 1000);
    const r = await call("POST", `${SA_PATH}/builder/token`, tokenRequest());
    expect(r.code, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: { name: "builder", namespace: NS },
      spec: { audiences: [SERVER_AUDIENCE], expirationSeconds: 3600 },
    });
    const token: string = r.body.status.token;
    const c = claims(token);
    expect(c).toMatchObject({
      sub: `system:serviceaccount:${NS}:builder`,
      aud: [SERVER_AUDIENCE],
      "kubernetes.io": { namespace: NS, serviceaccount: { name: "builder", uid } },
    });
    expect(c.exp).toBe((c.iat as number) + 3600);
    expect(c.iat as number).toBeGreaterThanOrEqual(before);
    expect(Date.parse(r.body.status.expirationTimestamp)).toBe((c.exp as number) * 1000);
  });

  it("decodes the protobuf body kubectl sends (audiences, expirationSeconds)", async () => {
    await createAccount("pb");
    // spec (2) { audiences (1), expirationSeconds (4, varint) }
    const seconds = protobuf.Writer.create()
      .uint32((4 << 3) | 0)
      .int64(7200)
      .finish();
    const spec = Buffer.concat([pbField(1, "vault"), pbField(1, SERVER_AUDIENCE), seconds]);
    const raw = Buffer.concat([pbField(1, new Uint8Array()), pbField(2, spec)]);
    const r = await call(
      "POST",
      `${SA_PATH}/pb/token`,
      protobufBody("authentication.k8s.io/v1", "TokenRequest", raw),
      { contentType: "application/vnd.kubernetes.protobuf" },
    );
    expect(r.code, JSON.stringify(r.body)).toBe(201);
    expect(r.body.spec).toMatchObject({
      audiences: ["vault", SERVER_AUDIENCE],
      expirationSeconds: 7200,
    });
    const c = claims(r.body.status.token);
    expect(c.aud).toEqual(["vault", SERVER_AUDIENCE]);
    expect(c.exp).toBe((c.iat as number) + 7200);
  });

  it("authenticates its token as the ServiceAccount until the account is deleted", async () => {
    const uid = await createAccount("deployer");
    const r = await call("POST", `${SA_PATH}/deployer/token`, tokenRequest());
    const token: string = r.body.status.token;
    const who = await accepted(token);
    expect(who.body.status.userInfo).toEqual({
      username: `system:serviceaccount:${NS}:deployer`,
      uid,
      groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"],
      extra: { "authentication.kubernetes.io/credential-id": [`JTI=${claims(token).jti}`] },
    });
    // RBAC: it may write ConfigMaps once bound to `edit` in its namespace.
    const configMap = { metadata: { name: "from-deployer" }, data: { a: "1" } };
    const before = await call("POST", `/api/v1/namespaces/${NS}/configmaps`, configMap, { token });
    expect(before.code, JSON.stringify(before.body)).toBe(403);
    const binding = await call(
      "POST",
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "deployer-edit" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" },
        subjects: [{ kind: "ServiceAccount", name: "deployer", namespace: NS }],
      },
    );
    expect(binding.code, JSON.stringify(binding.body)).toBe(201);
    const cm = await call("POST", `/api/v1/namespaces/${NS}/configmaps`, configMap, { token });
    expect(cm.code, JSON.stringify(cm.body)).toBe(201);

    expect((await call("DELETE", `${SA_PATH}/deployer`)).code).toBe(200);
    await eventually(async () => (await whoami(token)).code === 401, "the token to be refused");
    const refused = await whoami(token);
    expect(refused.body).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });

    // An account created again under the same name is another account.
    await createAccount("deployer");
    const again = await call("POST", `${SA_PATH}/deployer/token`, tokenRequest());
    await accepted(again.body.status.token);
    expect((await whoami(token)).code).toBe(401);
  });

  it("refuses a token for another audience, and one signed with another key", async () => {
    const uid = await createAccount("picky");
    const r = await call(
      "POST",
      `${SA_PATH}/picky/token`,
      tokenRequest({ audiences: ["https://vault.example"] }),
    );
    expect(r.code).toBe(201);
    const good = await call("POST", `${SA_PATH}/picky/token`, tokenRequest());
    await accepted(good.body.status.token); // the account is in the cache
    expect((await whoami(r.body.status.token)).code).toBe(401);
    const forged = new ServiceAccountTokens({ key: "x".repeat(32) }).issue(
      { namespace: NS, name: "picky", uid, audiences: [SERVER_AUDIENCE] },
      3600,
    );
    expect((await whoami(forged.token)).code).toBe(401);
  });

  it("answers 404 for a ServiceAccount that does not exist", async () => {
    const r = await call("POST", `${SA_PATH}/nobody/token`, tokenRequest());
    expect(r.code).toBe(404);
    expect(r.body).toMatchObject({
      reason: "NotFound",
      message: 'serviceaccounts "nobody" not found',
      details: { name: "nobody", kind: "serviceaccounts" },
    });
  });

  it("refuses durations under 10 minutes or over 2^32 seconds (422)", async () => {
    await createAccount("bounded");
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ expirationSeconds: 10 }, "spec.expirationSeconds", /less than 10 minutes/],
      [{ expirationSeconds: 2 ** 32 + 1 }, "spec.expirationSeconds", /larger than 2\^32/],
    ];
    for (const [spec, fieldPath, message] of cases) {
      const r = await call("POST", `${SA_PATH}/bounded/token`, tokenRequest(spec));
      expect(r.code, JSON.stringify(spec)).toBe(422);
      expect(r.body).toMatchObject({
        reason: "Invalid",
        details: { group: "authentication.k8s.io", kind: "TokenRequest", name: "bounded" },
      });
      expect(r.body.details.causes).toHaveLength(1);
      expect(r.body.details.causes[0].field).toBe(fieldPath);
      expect(r.body.details.causes[0].message).toMatch(message);
    }
    const exactly = await call(
      "POST",
      `${SA_PATH}/bounded/token`,
      tokenRequest({ expirationSeconds: 600 }),
    );
    expect(exactly.code).toBe(201);
    const other = await call("POST", `${SA_PATH}/bounded/token`, {
      ...tokenRequest(),
      metadata: { name: "someone-else" },
    });
    expect(other.code).toBe(422);
    expect(other.body.details.causes[0].field).toBe("metadata.name");
  });

  it("binds a token to a Pod or Secret, which it lives only as long as", async () => {
    await createAccount("runner");
    const pod = await call("POST", `/api/v1/namespaces/${NS}/pods`, {
      metadata: { name: "worker" },
      spec: { serviceAccountName: "runner", containers: [{ name: "c", image: "hello" }] },
    });
    expect(pod.code, JSON.stringify(pod.body)).toBe(201);
    const secret = await call("POST", `/api/v1/namespaces/${NS}/secrets`, {
      metadata: { name: "session" },
    });
    expect(secret.code).toBe(201);
    const bind = (ref: Record<string, unknown>) =>
      call(
        "POST",
        `${SA_PATH}/runner/token`,
        tokenRequest({ boundObjectRef: { apiVersion: "v1", ...ref } }),
      );

    const toPod = await bind({ kind: "Pod", name: "worker" });
    expect(toPod.code, JSON.stringify(toPod.body)).toBe(201);
    expect(toPod.body.spec.boundObjectRef).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      name: "worker",
      uid: pod.body.metadata.uid,
    });
    const podToken: string = toPod.body.status.token;
    expect((claims(podToken)["kubernetes.io"] as Record<string, unknown>).pod).toEqual({
      name: "worker",
      uid: pod.body.metadata.uid,
    });
    const toSecret = await bind({ kind: "Secret", name: "session", uid: secret.body.metadata.uid });
    expect(toSecret.code).toBe(201);
    const secretToken: string = toSecret.body.status.token;
    expect((await whoami(podToken)).code).toBe(201);
    expect((await whoami(secretToken)).code).toBe(201);

    // Refused as kube-apiserver refuses them.
    const wrongUid = await bind({ kind: "Secret", name: "session", uid: "not-its-uid" });
    expect(wrongUid.code).toBe(409);
    expect(wrongUid.body.message).toContain(
      "the UID in the bound object reference (not-its-uid) does not match the UID in record",
    );
    expect((await bind({ kind: "Pod", name: "absent" })).code).toBe(404);
    const node = await bind({ kind: "ConfigMap", name: "x" });
    expect(node.code).toBe(400);
    expect(node.body.message).toBe("cannot bind token to object of type /v1, Kind=ConfigMap");
    await createAccount("other");
    const otherAccount = await call(
      "POST",
      `${SA_PATH}/other/token`,
      tokenRequest({ boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "worker" } }),
    );
    expect(otherAccount.code).toBe(400);
    expect(otherAccount.body.message).toBe(
      'cannot bind token for serviceaccount "other" to pod running with different serviceaccount name.',
    );

    // Gone with the object (the Pod is deleted at once: it has no node).
    expect((await call("DELETE", `/api/v1/namespaces/${NS}/secrets/session`)).code).toBe(200);
    await eventually(
      async () => ((await whoami(secretToken)).code === 401 ? true : undefined),
      "the Secret's token refused",
    );
    expect((await whoami(podToken)).code).toBe(201);
    expect(
      (await call("DELETE", `/api/v1/namespaces/${NS}/pods/worker?gracePeriodSeconds=0`)).code,
    ).toBe(200);
    await eventually(
      async () => ((await whoami(podToken)).code === 401 ? true : undefined),
      "the Pod's token refused",
    );
  });

  it("answers 400 for a malformed body or another kind", async () => {
    await createAccount("strict");
    const path = `${SA_PATH}/strict/token`;
    expect((await call("POST", path, "{not json")).code).toBe(400);
    const wrongType = await call("POST", path, tokenRequest({ expirationSeconds: "long" }));
    expect(wrongType.code).toBe(400);
    const otherKind = await call("POST", path, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
    });
    expect(otherKind.code).toBe(400);
    const garbage = await call("POST", path, Buffer.from([0x6b, 0x38, 0x73, 0x00, 0xff, 0xff]), {
      contentType: "application/vnd.kubernetes.protobuf",
    });
    expect(garbage.code).toBe(400);
    const unknown = await call(
      "POST",
      `${path}?fieldValidation=Strict`,
      tokenRequest({ lifetime: 5 }),
    );
    expect(unknown.code).toBe(400);
    expect(unknown.body.message).toMatch(/unknown field "spec.lifetime"/);
  });

  it("serves only create on the token subresource, and POST only where create is served", async () => {
    await createAccount("verbs");
    expect((await call("GET", `${SA_PATH}/verbs/token`)).code).toBe(405);
    expect((await call("PUT", `${SA_PATH}/verbs/token`, tokenRequest())).code).toBe(405);
    // POST to an object itself, or to a subresource without create, is not allowed.
    expect((await call("POST", `${SA_PATH}/verbs`, { metadata: { name: "verbs" } })).code).toBe(
      405,
    );
    const finalize = await call("POST", `/api/v1/namespaces/${NS}/finalize`, {
      metadata: { name: NS },
    });
    expect(finalize.code).toBe(405);
    expect((await call("POST", `/api/v1/namespaces/${NS}/configmaps/x/token`, {})).code).toBe(404);
  });

  it("is listed in discovery as serviceaccounts/token, create, TokenRequest", async () => {
    const legacy = await call("GET", "/api/v1");
    expect(
      legacy.body.resources.find((r: { name: string }) => r.name === "serviceaccounts/token"),
    ).toEqual({
      name: "serviceaccounts/token",
      singularName: "",
      namespaced: true,
      group: "authentication.k8s.io",
      version: "v1",
      kind: "TokenRequest",
      verbs: ["create"],
    });
  });

  it("gives a Pod-bound token's user Kubernetes' extra: its Pod, its Node and its id", async () => {
    const node = await call("POST", "/api/v1/nodes", { metadata: { name: "extra-node" } });
    expect(node.code, JSON.stringify(node.body)).toBe(201);
    await createAccount("extra");
    const pod = await call("POST", `/api/v1/namespaces/${NS}/pods`, {
      metadata: { name: "extra-pod" },
      spec: {
        serviceAccountName: "extra",
        nodeName: "extra-node",
        containers: [{ name: "c", image: "hello" }],
      },
    });
    expect(pod.code, JSON.stringify(pod.body)).toBe(201);
    const made = await call(
      "POST",
      `${SA_PATH}/extra/token`,
      tokenRequest({ boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "extra-pod" } }),
    );
    expect(made.code, JSON.stringify(made.body)).toBe(201);
    const token: string = made.body.status.token;
    const k8s = claims(token)["kubernetes.io"] as Record<string, unknown>;
    expect(k8s.node).toEqual({ name: "extra-node", uid: node.body.metadata.uid });
    const extra = {
      "authentication.kubernetes.io/credential-id": [`JTI=${claims(token).jti}`],
      "authentication.kubernetes.io/node-name": ["extra-node"],
      "authentication.kubernetes.io/node-uid": [node.body.metadata.uid],
      "authentication.kubernetes.io/pod-name": ["extra-pod"],
      "authentication.kubernetes.io/pod-uid": [pod.body.metadata.uid],
    };
    await accepted(token);
    const review = await call("POST", "/apis/authentication.k8s.io/v1/tokenreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token },
    });
    expect(review.code, JSON.stringify(review.body)).toBe(201);
    expect(review.body.status.user, JSON.stringify(review.body)).toEqual({
      username: `system:serviceaccount:${NS}:extra`,
      uid: expect.any(String),
      groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"],
      extra,
    });

    // kubectl auth whoami, as the token, shows the same.
    const dir = mkdtempSync(join(tmpdir(), "setpoint-token-extra-"));
    const kubeconfig = join(dir, "kubeconfig");
    await writeKubeconfig(kubeconfig, { server: srv.url, caCert: srv.caCert ?? "", token });
    const kubectl = new Kubectl(kubeconfig);
    try {
      const out = parse(await kubectl.ok(["auth", "whoami", "-o", "yaml"]));
      expect(out.status.userInfo.extra).toEqual(extra);
    } finally {
      await kubectl.close();
      rmSync(dir, { recursive: true, force: true });
    }

    // A token bound to nothing carries its id only.
    const plain = await call("POST", `${SA_PATH}/extra/token`, tokenRequest());
    const unbound = await whoami(plain.body.status.token);
    expect(unbound.body.status.userInfo.extra).toEqual({
      "authentication.kubernetes.io/credential-id": [`JTI=${claims(plain.body.status.token).jti}`],
    });
  });
});
