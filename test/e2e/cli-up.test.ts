/**
 * `setpoint up` as a user runs it: a real process (`node bin/setpoint.mjs up`) on a
 * fresh data dir, reached over https with the kubeconfig it writes. Checks what it
 * prints, TLS and token authentication (401 for requests without a valid token,
 * health and version excepted), readiness, that a restart keeps data and
 * credentials, that SIGTERM and SIGINT end open watches cleanly and exit 0, bad
 * flags (exit code 2), and etcd storage with two apiservers side by side.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { describeWithEtcd, type EtcdProcess, startEtcd } from "../helpers/etcd.ts";
import { openStream, request, type Target, until } from "./helpers/http.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { runSetpoint, type SetpointProcess, startSetpoint } from "./helpers/setpoint.ts";

/** Per-test timeout: process starts include compiling the sources on a loaded machine. */
const TEST_TIMEOUT_MS = 60_000;
/** Longest wait for each of the bad-flag runs, started together. */
const BAD_FLAGS_TIMEOUT_MS = 150_000;
/** The namespaces every control plane has. */
const SYSTEM_NAMESPACES = ["default", "kube-node-lease", "kube-public", "kube-system"];

interface Json {
  // biome-ignore lint/suspicious/noExplicitAny: API objects and kubeconfigs are plain JSON under test
  [k: string]: any;
}

function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

function expectUnauthorized(r: { code: number; json: unknown; text: string }): void {
  expect(r.code, r.text).toBe(401);
  expect(r.json).toMatchObject({
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    reason: "Unauthorized",
    code: 401,
  });
}

/** Names in `kubectl get ... -o name` output, without the type prefix. */
function names(stdout: string): string[] {
  return stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(l.indexOf("/") + 1))
    .sort();
}

describe("setpoint up on SQLite", () => {
  const dataDir = tempDir("setpoint-up-");
  const dirs: string[] = [dataDir];
  const running: SetpointProcess[] = [];
  const kubectls: Kubectl[] = [];
  let sp: SetpointProcess;
  let k: Kubectl;

  // A second user, from a token file in Kubernetes' format.
  const tokenFile = join(dataDir, "tokens.csv");
  const aliceToken = randomBytes(24).toString("hex");
  writeFileSync(tokenFile, `# team tokens\n${aliceToken},alice,u-1,"platform,ops"\n`);

  const start = async (): Promise<SetpointProcess> => {
    const p = await startSetpoint(["--data-dir", dataDir, "--token-auth-file", tokenFile]);
    running.push(p);
    return p;
  };
  const kubectl = (kubeconfig: string): Kubectl => {
    const kc = new Kubectl(kubeconfig);
    kubectls.push(kc);
    return kc;
  };

  beforeAll(async () => {
    sp = await start();
    k = kubectl(sp.kubeconfig);
  });
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    for (const kc of kubectls) await kc.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("prints where it serves and the export KUBECONFIG line, and is ready", async () => {
    expect(sp.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(sp.url).port)).toBeGreaterThan(0);
    expect(sp.storage).toBe("sqlite");
    const kubeconfig = join(dataDir, "kubeconfig");
    expect(sp.stdout().split("\n")).toContain(`export KUBECONFIG=${kubeconfig}`);
    expect(sp.kubeconfig).toBe(kubeconfig);
    // It holds a credential: readable by the owner only.
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    const doc = parse(readFileSync(kubeconfig, "utf8")) as Json;
    expect(doc["current-context"]).toBe("setpoint");
    expect(doc.clusters[0].cluster.server).toBe(sp.url);
    expect(sp.target.ca).toContain("-----BEGIN CERTIFICATE-----");
    expect(sp.target.token.length).toBeGreaterThanOrEqual(32);

    const ready = await request(sp.target, "GET", "/readyz", { anonymous: true });
    expect([ready.code, ready.text]).toEqual([200, "ok"]);
  });

  it(
    "serves kubectl over https with the kubeconfig's CA and token",
    async () => {
      expect(names(await k.ok(["get", "ns", "-o", "name"]))).toEqual(SYSTEM_NAMESPACES);
      expect(await k.ok(["create", "cm", "kept", "--from-literal=answer=42"])).toBe(
        "configmap/kept created\n",
      );

      // Without the CA, the server's certificate is not trusted.
      const doc = parse(readFileSync(sp.kubeconfig, "utf8")) as Json;
      delete doc.clusters[0].cluster["certificate-authority-data"];
      const dir = tempDir("setpoint-up-noca-");
      dirs.push(dir);
      const noCa = join(dir, "kubeconfig");
      writeFileSync(noCa, stringify(doc));
      const untrusted = await kubectl(noCa).fails(["get", "ns"]);
      expect(untrusted.stderr).toMatch(/certificate signed by unknown authority/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "authenticates the users of --token-auth-file, with their uid and groups",
    async () => {
      const doc = parse(readFileSync(sp.kubeconfig, "utf8")) as Json;
      doc.users[0].user.token = aliceToken;
      const dir = tempDir("setpoint-up-alice-");
      dirs.push(dir);
      const aliceConfig = join(dir, "kubeconfig");
      writeFileSync(aliceConfig, stringify(doc));
      const alice = kubectl(aliceConfig);
      const who = JSON.parse(await alice.ok(["auth", "whoami", "-o", "json"])) as Json;
      expect(who.status.userInfo).toEqual({
        username: "alice",
        uid: "u-1",
        groups: ["platform", "ops", "system:authenticated"],
      });
      // RBAC: the group ops gets `edit` in default, then alice may write there.
      await k.ok(["apply", "-f", "-"], {
        input: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ops-edit, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: ops}]
`,
      });
      expect(await alice.ok(["create", "cm", "from-alice", "--from-literal=a=b"])).toBe(
        "configmap/from-alice created\n",
      );
      const admin = JSON.parse(await k.ok(["auth", "whoami", "-o", "json"])) as Json;
      expect(admin.status.userInfo.username).toBe("admin");
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "answers 401 with a Status to requests without a valid token, except health and version",
    async () => {
      const wrongToken: Target = { ...sp.target, token: "not-the-token" };
      const results = await Promise.all([
        request(sp.target, "GET", "/api/v1/namespaces", { anonymous: true }),
        request(wrongToken, "GET", "/api/v1/namespaces"),
        request(sp.target, "GET", "/api", { anonymous: true }),
        request(sp.target, "GET", "/apis", { anonymous: true }),
        request(sp.target, "GET", "/openapi/v3", { anonymous: true }),
        request(sp.target, "POST", "/api/v1/namespaces/default/configmaps", {
          anonymous: true,
          body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "sneaky" } },
        }),
        request(sp.target, "GET", "/api/v1/namespaces", {
          anonymous: true,
          headers: { Authorization: "Basic YWRtaW46YWRtaW4=" },
        }),
      ]);
      for (const r of results) expectUnauthorized(r);

      const open = await Promise.all(
        ["/version", "/healthz", "/livez", "/readyz"].map((p) =>
          request(sp.target, "GET", p, { anonymous: true }),
        ),
      );
      expect(open.map((r) => r.code)).toEqual([200, 200, 200, 200]);
      expect(open[0].json).toMatchObject({ major: "1", minor: "32" });

      const authed = await request(
        sp.target,
        "GET",
        "/api/v1/namespaces/default/configmaps/sneaky",
      );
      expect(authed.code).toBe(404);

      const doc = parse(readFileSync(sp.kubeconfig, "utf8")) as Json;
      doc.users[0].user.token = "not-the-token";
      const dir = tempDir("setpoint-up-badtoken-");
      dirs.push(dir);
      const bad = join(dir, "kubeconfig");
      writeFileSync(bad, stringify(doc));
      const refused = await kubectl(bad).fails(["get", "cm"]);
      expect(refused.stderr).toMatch(/error: You must be logged in to the server/);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "keeps data and credentials across a restart",
    async () => {
      const before = (await request(sp.target, "GET", "/api/v1/namespaces/default/configmaps/kept"))
        .json as Json;
      expect(before.data).toEqual({ answer: "42" });
      // A ServiceAccount token, signed with the data dir's key (owner-only).
      const saPath = "/api/v1/namespaces/default/serviceaccounts";
      expect(
        (await request(sp.target, "POST", saPath, { body: { metadata: { name: "keeper" } } })).code,
      ).toBe(201);
      const issued = await request(sp.target, "POST", `${saPath}/keeper/token`, {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest" },
      });
      expect(issued.code, issued.text).toBe(201);
      const saToken = (issued.json as Json).status.token as string;
      expect(statSync(join(dataDir, "service-account.key")).mode & 0o777).toBe(0o600);
      const exit = await sp.stop("SIGTERM");
      expect([exit.code, exit.signal], exit.stderr).toEqual([0, null]);

      const again = await start();
      expect(again.target.ca).toBe(sp.target.ca);
      expect(again.target.token).toBe(sp.target.token);
      const after = (
        await request(again.target, "GET", "/api/v1/namespaces/default/configmaps/kept")
      ).json as Json;
      expect(after.metadata).toMatchObject({
        uid: before.metadata.uid,
        resourceVersion: before.metadata.resourceVersion,
        creationTimestamp: before.metadata.creationTimestamp,
      });
      expect(after.data).toEqual({ answer: "42" });
      // The token is still good: the key was kept.
      const asKeeper: Target = { ...again.target, token: saToken };
      // (Accepted: it is the ServiceAccount; RBAC then decides what it may do.)
      await until(
        async () =>
          (
            await request(asKeeper, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
              body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
            })
          ).code === 201,
        "the ServiceAccount token to be accepted after the restart",
      );
      // The system namespaces are there once, and kubectl works with the rewritten kubeconfig.
      expect(names(await k.ok(["get", "ns", "-o", "name"]))).toEqual(SYSTEM_NAMESPACES);
      expect(await k.ok(["get", "cm", "kept", "-o", "jsonpath={.data.answer}"])).toBe("42");
      sp = again;
    },
    TEST_TIMEOUT_MS,
  );

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(
      `${signal} ends open watches cleanly and exits 0`,
      async () => {
        if (sp.child.exitCode !== null) sp = await start();
        const watch = k.start(["get", "cm", "-w", "--output-watch-events"]);
        await watch.waitFor(/ADDED\s+kept/);
        const list = (await request(sp.target, "GET", "/api/v1/configmaps")).json as Json;
        const raw = await openStream(
          sp.target,
          `/api/v1/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}`,
        );
        expect(raw.code).toBe(200);
        await k.ok(["create", "cm", `before-${signal.toLowerCase()}`]);
        // The test's own create (controllers write other ConfigMaps, e.g. kube-root-ca.crt).
        const created = () =>
          raw.lines.find(
            (l) =>
              (JSON.parse(l) as Json).object.metadata.name === `before-${signal.toLowerCase()}`,
          );
        await until(() => created() !== undefined, "the raw watch to see the create");
        await watch.waitFor(new RegExp(`ADDED\\s+before-${signal.toLowerCase()}`));

        const exit = await sp.stop(signal);
        expect([exit.code, exit.signal], exit.stderr).toEqual([0, null]);
        // The watch response was ended by the server (a complete chunked response),
        // not cut when the connections were closed.
        expect(await raw.ended).toBe("end");
        expect(JSON.parse(created() ?? "{}")).toMatchObject({
          type: "ADDED",
          object: { metadata: { name: `before-${signal.toLowerCase()}` } },
        });
        const kubectlExit = await watch.exited;
        expect(kubectlExit.code, kubectlExit.stderr).toBe(0);
        expect(exit.stderr).toContain(`"signal":"${signal}"`);
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe("setpoint up: bad flags", () => {
  const dataDir = tempDir("setpoint-up-flags-");
  const badTokenFile = join(dataDir, "bad.csv");
  writeFileSync(badTokenFile, "t1,bob,u-2\nt2,carol\n");
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it(
    "exits 2 with a message naming the problem, and serves nothing",
    async () => {
      const cases: [string[], RegExp][] = [
        [["up", "--no-such-flag"], /Unknown option '--no-such-flag'/],
        [["up", "--data-dir", dataDir, "--storage", "mysql"], /unknown --storage "mysql"/],
        [["up", "--data-dir", dataDir, "--listen", "localhost"], /--listen must be HOST:PORT/],
        [["up", "--data-dir", dataDir, "--listen", "127.0.0.1:70000"], /port out of range/],
        [
          ["up", "--data-dir", dataDir, "--kubernetes-version", "1.26"],
          /--kubernetes-version must be 1\.27 to 1\.33/,
        ],
        [
          ["up", "--data-dir", dataDir, "--storage", "etcd"],
          /--storage etcd needs --etcd-endpoints/,
        ],
        [
          ["up", "--data-dir", dataDir, "--service-cluster-ip-range", "127.100.0.0"],
          /--service-cluster-ip-range: invalid service cluster IP range "127\.100\.0\.0": want an IPv4 CIDR from \/8 to \/30/,
        ],
        [["up", "--data-dir"], /argument missing|--data-dir/],
        [
          ["up", "--data-dir", dataDir, "--token-auth-file", join(dataDir, "absent.csv")],
          /--token-auth-file: ENOENT/,
        ],
        [
          ["up", "--data-dir", dataDir, "--token-auth-file", badTokenFile],
          /bad\.csv, line 2: want token,user,uid/,
        ],
        [
          ["up", "--data-dir", dataDir, "--log-format", "yaml"],
          /--log-format must be text or json, got "yaml"/,
        ],
        [["up", "--data-dir", dataDir, "--log-level", "loud"], /--log-level must be one of trace/],
        [["down"], /unknown command "down"/],
      ];
      // A dozen processes at once, each compiling the sources on a shared machine.
      const results = await Promise.all(
        cases.map(([args]) => runSetpoint(args, BAD_FLAGS_TIMEOUT_MS)),
      );
      results.forEach((r, i) => {
        const [args, message] = cases[i];
        expect(r.code, `${args.join(" ")}\n${r.stderr}`).toBe(2);
        expect(r.stderr).toMatch(message);
        // A usage error is a message and the usage, not a stack trace.
        expect(r.stderr).not.toMatch(/^\s+at /m);
        expect(r.stdout).not.toContain("Setpoint is serving");
      });
      const help = await runSetpoint(["up", "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("Usage: setpoint up [flags]");
    },
    BAD_FLAGS_TIMEOUT_MS + TEST_TIMEOUT_MS,
  );
});

describeWithEtcd("setpoint up on etcd, two apiservers side by side", () => {
  let etcd: EtcdProcess;
  const dirs: string[] = [];
  const running: SetpointProcess[] = [];
  const kubectls: Kubectl[] = [];
  let a: SetpointProcess;
  let b: SetpointProcess;
  let ka: Kubectl;
  let kb: Kubectl;
  const prefix = `/setpoint-e2e-${randomBytes(4).toString("hex")}/`;

  const start = async (dataDir: string): Promise<SetpointProcess> => {
    const p = await startSetpoint([
      "--data-dir",
      dataDir,
      "--storage",
      "etcd",
      "--etcd-endpoints",
      etcd.clientUrl,
      "--etcd-prefix",
      prefix,
    ]);
    running.push(p);
    return p;
  };

  beforeAll(async () => {
    etcd = await startEtcd();
    dirs.push(tempDir("setpoint-up-etcd-a-"), tempDir("setpoint-up-etcd-b-"));
    [a, b] = await Promise.all([start(dirs[0]), start(dirs[1])]);
    ka = new Kubectl(a.kubeconfig);
    kb = new Kubectl(b.kubeconfig);
    kubectls.push(ka, kb);
  });
  afterAll(async () => {
    for (const p of running) await p.stop("SIGKILL");
    for (const kc of kubectls) await kc.close();
    await etcd?.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it(
    "see each other's writes and watches",
    async () => {
      expect([a.storage, b.storage]).toEqual(["etcd", "etcd"]);
      // Both bootstrapped the same namespaces; each exists once.
      const [nsA, nsB] = await Promise.all([
        ka.ok(["get", "ns", "-o", "name"]),
        kb.ok(["get", "ns", "-o", "name"]),
      ]);
      expect(names(nsA)).toEqual(SYSTEM_NAMESPACES);
      expect(names(nsB)).toEqual(SYSTEM_NAMESPACES);

      const watchB = kb.start(["get", "cm", "-w", "--output-watch-events"]);
      const listA = (await request(a.target, "GET", "/api/v1/configmaps")).json as Json;
      const rawA = await openStream(
        a.target,
        `/api/v1/configmaps?watch=true&resourceVersion=${listA.metadata.resourceVersion}`,
      );
      expect(rawA.code).toBe(200);

      await ka.ok(["create", "cm", "from-a", "--from-literal=who=a"]);
      await watchB.waitFor(/ADDED\s+from-a/);
      const viaB = (await request(b.target, "GET", "/api/v1/namespaces/default/configmaps/from-a"))
        .json as Json;
      const viaA = (await request(a.target, "GET", "/api/v1/namespaces/default/configmaps/from-a"))
        .json as Json;
      expect(viaB).toEqual(viaA);

      // A conflict through B on an object A just changed.
      await kb.ok(["create", "cm", "from-b", "--from-literal=who=b"]);
      const stale = (await request(b.target, "GET", "/api/v1/namespaces/default/configmaps/from-b"))
        .json as Json;
      await ka.ok(["label", "cm", "from-b", "seen-by=a"]);
      const conflict = await request(
        b.target,
        "PUT",
        "/api/v1/namespaces/default/configmaps/from-b",
        {
          body: { ...stale, data: { who: "stale" } },
        },
      );
      expect(conflict.code).toBe(409);

      await kb.ok(["delete", "cm", "from-a"]);
      await watchB.waitFor(/DELETED\s+from-a/);
      // The test's own ConfigMaps: controllers write others (each namespace's kube-root-ca.crt).
      const mine = () =>
        rawA.lines
          .map((l) => JSON.parse(l) as Json)
          .filter((e) => ["from-a", "from-b"].includes(e.object.metadata.name));
      await until(() => mine().length >= 4, "A's watch to see B's writes");
      rawA.close();
      const events = mine();
      expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
        "ADDED from-a",
        "ADDED from-b",
        "MODIFIED from-b",
        "DELETED from-a",
      ]);
      // Resource versions are etcd revisions, the same through either server.
      const revs = events.map((e) => Number(e.object.metadata.resourceVersion));
      expect(revs).toEqual([...revs].sort((x, y) => x - y));
      expect(events[1].object.metadata.resourceVersion).toBe(stale.metadata.resourceVersion);
      await watchB.stop();
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "exits 0 on SIGTERM while the other keeps serving, and a restart sees the data",
    async () => {
      const exit = await a.stop("SIGTERM");
      expect([exit.code, exit.signal], exit.stderr).toEqual([0, null]);
      expect(
        await kb.ok(["get", "cm", "from-b", "-o", "jsonpath={.metadata.labels.seen-by}"]),
      ).toBe("a");
      await kb.ok(["create", "cm", "while-a-was-down"]);
      a = await start(dirs[0]);
      // Beside the root CA every namespace gets (the root-ca-cert-publisher controller).
      expect(
        names(await ka.ok(["get", "cm", "-o", "name"])).filter((n) => n !== "kube-root-ca.crt"),
      ).toEqual(["from-b", "while-a-was-down"]);
    },
    TEST_TIMEOUT_MS,
  );
});
