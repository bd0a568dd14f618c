import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  KubeconfigError,
  kubeconfigYaml,
  loadKubeconfig,
} from "../../packages/runtime/src/client/kubeconfig.ts";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(rel: string, content: string | object): string {
  const p = join(dir, rel);
  mkdirSync(join(p, ".."), { recursive: true });
  writeFileSync(p, typeof content === "string" ? content : stringify(content));
  return p;
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");

function config(
  clusters: Record<string, object>,
  users: Record<string, object>,
  contexts: Record<string, object>,
  current?: string,
): object {
  const doc: Record<string, unknown> = {
    apiVersion: "v1",
    kind: "Config",
    clusters: Object.entries(clusters).map(([name, cluster]) => ({ name, cluster })),
    users: Object.entries(users).map(([name, user]) => ({ name, user })),
    contexts: Object.entries(contexts).map(([name, context]) => ({ name, context })),
  };
  if (current) doc["current-context"] = current;
  return doc;
}

const noEnv = { HOME: join(dir, "nohome") };

describe("loadKubeconfig", () => {
  it("reads inline certificate data and a token from an explicit path", () => {
    const p = write(
      "inline.yaml",
      config(
        { c: { server: "https://a.example:6443", "certificate-authority-data": b64("CA-PEM") } },
        {
          u: {
            "client-certificate-data": b64("CERT"),
            "client-key-data": b64("KEY"),
            token: "t0k",
          },
        },
        { ctx: { cluster: "c", user: "u", namespace: "team-a" } },
        "ctx",
      ),
    );
    const c = loadKubeconfig({ path: p, env: noEnv });
    expect(c.server).toBe("https://a.example:6443");
    expect(c.ca?.toString()).toBe("CA-PEM");
    expect(c.cert?.toString()).toBe("CERT");
    expect(c.key?.toString()).toBe("KEY");
    expect(c.token).toBe("t0k");
    expect(c.namespace).toBe("team-a");
  });

  it("resolves file references relative to the kubeconfig that names them", () => {
    write("sub/certs/ca.pem", "CA-FROM-FILE");
    write("sub/certs/client.crt", "CRT-FROM-FILE");
    write("sub/certs/client.key", "KEY-FROM-FILE");
    write("sub/token", "file-token\n");
    const p = write(
      "sub/config",
      config(
        { c: { server: "https://b:1", "certificate-authority": "certs/ca.pem" } },
        {
          u: { "client-certificate": "certs/client.crt", "client-key": "certs/client.key" },
          v: { tokenFile: "token" },
        },
        { certs: { cluster: "c", user: "u" }, tok: { cluster: "c", user: "v" } },
        "certs",
      ),
    );
    const c = loadKubeconfig({ path: p, env: noEnv });
    expect(c.ca?.toString()).toBe("CA-FROM-FILE");
    expect(c.cert?.toString()).toBe("CRT-FROM-FILE");
    expect(c.key?.toString()).toBe("KEY-FROM-FILE");
    const t = loadKubeconfig({ path: p, context: "tok", env: noEnv });
    expect(t.tokenFile).toBe(join(dir, "sub/token"));
    expect(t.cert).toBeUndefined();
  });

  it("merges the KUBECONFIG list: the first definition of each name and current-context wins", () => {
    const first = write(
      "merge/one.yaml",
      config(
        { shared: { server: "https://first:1" } },
        { u1: { token: "one" } },
        {
          a: { cluster: "shared", user: "u1" },
        },
      ),
    );
    const second = write(
      "merge/two.yaml",
      config(
        { shared: { server: "https://second:2" }, other: { server: "https://other:3" } },
        { u1: { token: "overridden" }, u2: { token: "two" } },
        { a: { cluster: "other", user: "u2" }, b: { cluster: "other", user: "u2" } },
        "b",
      ),
    );
    const env = { ...noEnv, KUBECONFIG: [join(dir, "missing.yaml"), first, "", second].join(":") };
    const c = loadKubeconfig({ env });
    // current-context comes from the second file (the first sets none): b → other/u2.
    expect(c.server).toBe("https://other:3");
    expect(c.token).toBe("two");
    expect(c.user).toBe("u2");
    // Context "a" is defined by the first file, which wins, with the first file's cluster and user.
    const a = loadKubeconfig({ env, context: "a" });
    expect(a.server).toBe("https://first:1");
    expect(a.token).toBe("one");
    expect(a.user).toBe("u1");
  });

  it("falls back to the service account in a pod, and to ~/.kube/config otherwise", () => {
    const sa = join(dir, "sa");
    write("sa/token", "sa-token");
    write("sa/ca.crt", "SA-CA");
    write("sa/namespace", "kube-system\n");
    const env = { ...noEnv, KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
    const c = loadKubeconfig({ env, serviceAccountDir: sa });
    expect(c.server).toBe("https://10.0.0.1:443");
    expect(c.tokenFile).toBe(join(sa, "token"));
    expect(c.ca?.toString()).toBe("SA-CA");
    expect(c.namespace).toBe("kube-system");
    const v6 = loadKubeconfig({
      env: { ...env, KUBERNETES_SERVICE_HOST: "fd00::1" },
      serviceAccountDir: sa,
    });
    expect(v6.server).toBe("https://[fd00::1]:443");

    write(
      "home/.kube/config",
      config({ c: { server: "http://home:8080" } }, {}, { x: { cluster: "c" } }, "x"),
    );
    const home = loadKubeconfig({ env: { HOME: join(dir, "home") } });
    expect(home.server).toBe("http://home:8080");
    expect(home.token).toBeUndefined();
  });

  it("explains what is wrong", () => {
    expect(() => loadKubeconfig({ env: noEnv })).toThrow(KubeconfigError);
    expect(() => loadKubeconfig({ path: join(dir, "nope"), env: noEnv })).toThrow(/does not exist/);
    const p = write(
      "bad.yaml",
      config(
        { c: { server: "https://c:1" } },
        { u: { exec: { command: "aws" } }, k: { "client-key-data": b64("K") } },
        { e: { cluster: "c", user: "u" }, k: { cluster: "c", user: "k" }, m: { cluster: "gone" } },
      ),
    );
    expect(() => loadKubeconfig({ path: p, env: noEnv })).toThrow(/no current-context/);
    expect(() => loadKubeconfig({ path: p, context: "zzz", env: noEnv })).toThrow(/"zzz" is not/);
    expect(() => loadKubeconfig({ path: p, context: "e", env: noEnv })).toThrow(/exec/);
    expect(() => loadKubeconfig({ path: p, context: "k", env: noEnv })).toThrow(/no certificate/);
    expect(() => loadKubeconfig({ path: p, context: "m", env: noEnv })).toThrow(/cluster "gone"/);
  });

  it("reads back what kubeconfigYaml writes", () => {
    const p = write(
      "written.yaml",
      kubeconfigYaml({
        server: "https://127.0.0.1:1234",
        ca: Buffer.from("CA"),
        token: "abc",
        namespace: "ns",
      }),
    );
    const c = loadKubeconfig({ path: p, env: noEnv });
    expect(c).toMatchObject({ server: "https://127.0.0.1:1234", token: "abc", namespace: "ns" });
    expect(c.ca?.toString()).toBe("CA");
  });

  it("reads every apiserver address from the setpoint.dev/servers extension, server first", () => {
    const p = write(
      "servers.yaml",
      kubeconfigYaml({
        server: "https://127.0.0.1:2",
        servers: ["https://127.0.0.1:1", "https://127.0.0.1:2"],
        token: "abc",
      }),
    );
    const c = loadKubeconfig({ path: p, env: noEnv });
    expect(c.server).toBe("https://127.0.0.1:2");
    expect(c.servers).toEqual(["https://127.0.0.1:2", "https://127.0.0.1:1"]);
    const single = loadKubeconfig({
      path: write("one.yaml", kubeconfigYaml({ server: "https://127.0.0.1:3" })),
      env: noEnv,
    });
    expect(single.servers).toBeUndefined();
    const bad = write(
      "bad-servers.yaml",
      config(
        {
          c: {
            server: "https://a:1",
            extensions: [{ name: "setpoint.dev/servers", extension: { servers: "nope" } }],
          },
        },
        {},
        { c: { cluster: "c" } },
        "c",
      ),
    );
    expect(() => loadKubeconfig({ path: bad, env: noEnv })).toThrow(/no list of servers/);
    // The guide's example (docs/runtime.md shows this file).
    const guide = loadKubeconfig({
      path: join(
        import.meta.dirname,
        "../../examples/configmapset/guide/several-apiservers.kubeconfig.yaml",
      ),
      env: noEnv,
    });
    expect(guide.servers).toEqual(["https://10.0.0.1:6443", "https://10.0.0.2:6443"]);
  });
});
