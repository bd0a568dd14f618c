/**
 * `kubectl create token` against the server (protobuf TokenRequest, over https
 * with token authentication), then kubectl using that token: it is the
 * ServiceAccount (`auth whoami`), may create a ConfigMap once RBAC grants it
 * `edit` in its namespace (403 before), and is refused (401)
 * once the ServiceAccount is deleted.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "../../src/apiserver/server/index.ts";
import { eventually } from "../helpers/poll.ts";
import { request } from "./helpers/http.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { type E2eServer, startE2eServer } from "./helpers/server.ts";

let srv: E2eServer;
let admin: Kubectl;
let asBot: Kubectl;
let token: string;

function claims(t: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(t.split(".")[1]!, "base64url").toString("utf8"));
}

beforeAll(async () => {
  srv = await startE2eServer({ tls: true });
  admin = new Kubectl(srv.kubeconfig);
});
afterAll(async () => {
  await admin?.close();
  await asBot?.close();
  await srv?.close();
});

describe("kubectl create token", () => {
  it("prints a token for the ServiceAccount, with --duration and --audience", async () => {
    await admin.ok(["create", "namespace", "ci"]);
    await admin.ok(["create", "serviceaccount", "bot", "-n", "ci"]);
    token = (await admin.ok(["create", "token", "bot", "-n", "ci", "--duration", "1h"])).trim();
    const c = claims(token);
    expect(c.sub).toBe("system:serviceaccount:ci:bot");
    expect(c.exp).toBe((c.iat as number) + 3600);
    const aud = (
      await admin.ok(["create", "token", "bot", "-n", "ci", "--audience", "https://vault.example"])
    ).trim();
    expect(claims(aud).aud).toEqual(["https://vault.example"]);
  });

  it("refuses an unknown ServiceAccount and a duration under 10 minutes", async () => {
    const missing = await admin.fails(["create", "token", "nobody", "-n", "ci"]);
    expect(missing.stderr).toMatch(/serviceaccounts "nobody" not found/);
    const short = await admin.fails(["create", "token", "bot", "-n", "ci", "--duration", "1m"]);
    expect(short.stderr).toMatch(/may not specify a duration less than 10 minutes/);
  });

  it("authenticates kubectl as the ServiceAccount until it is deleted", async () => {
    const kubeconfig = join(admin.home, "bot-kubeconfig");
    await writeKubeconfig(kubeconfig, { server: srv.url, caCert: srv.caCert!, token });
    asBot = new Kubectl(kubeconfig);
    const who = await eventually(async () => {
      const r = await asBot.run(["auth", "whoami", "-o", "json"]);
      return r.code === 0 ? r.stdout : undefined;
    }, "kubectl auth whoami as the ServiceAccount");
    const uid = (
      await admin.ok(["get", "sa", "bot", "-n", "ci", "-o", "jsonpath={.metadata.uid}"])
    ).trim();
    expect(JSON.parse(who).status.userInfo).toEqual({
      username: "system:serviceaccount:ci:bot",
      uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"],
      // The token's id, as Kubernetes 1.32 adds it.
      extra: { "authentication.kubernetes.io/credential-id": [`JTI=${claims(token).jti}`] },
    });
    // RBAC: nothing until granted; `edit` in its namespace lets it write ConfigMaps.
    const forbidden = await asBot.fails([
      "create",
      "configmap",
      "made-by-bot",
      "-n",
      "ci",
      "--from-literal=a=1",
    ]);
    expect(forbidden.stderr).toContain(
      'User "system:serviceaccount:ci:bot" cannot create resource "configmaps" in API group "" in the namespace "ci"',
    );
    await admin.ok(["apply", "-f", "-"], {
      input: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bot-edit, namespace: ci}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{kind: ServiceAccount, name: bot, namespace: ci}]
`,
    });
    await asBot.ok(["create", "configmap", "made-by-bot", "-n", "ci", "--from-literal=a=1"]);
    expect(
      await admin.ok(["get", "configmap", "made-by-bot", "-n", "ci", "-o", "jsonpath={.data.a}"]),
    ).toBe("1");

    await admin.ok(["delete", "serviceaccount", "bot", "-n", "ci"]);
    await eventually(
      async () =>
        (await request({ url: srv.url, ca: srv.caCert!, token }, "GET", "/api/v1/namespaces"))
          .code === 401,
      "the token to be refused",
    );
    const refused = await asBot.fails(["get", "configmaps", "-n", "ci"]);
    // kubectl words a 401 as "You must be logged in to the server".
    expect(refused.stderr).toMatch(/You must be logged in to the server/);
  });
});
