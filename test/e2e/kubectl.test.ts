/**
 * The real kubectl against the apiserver: get in every output form, watch, apply
 * (client-side and server-side), create, replace, the three patch types, label,
 * annotate, delete, wait, explain, api-resources, conflicts and server dry-run.
 * The default kubectl (1.32) runs everything; 1.28 and 1.33 run a smoke subset
 * against a server reporting their version (the kubectl dispatcher picks its build
 * by the server's version).
 *
 * One server per describe block (in process, plain http, no auth: https and tokens
 * are covered by cli-up.test.ts); each test works in a namespace of its own.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { writeKubeconfig } from "../../src/apiserver/server/index.ts";
import { request, type Target } from "./helpers/http.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { type RecordingProxy, startRecordingProxy } from "./helpers/recording-proxy.ts";
import { type E2eServer, startE2eServer } from "./helpers/server.ts";
import { registryWithWidgets, WIDGET_API_VERSION } from "./helpers/widgets.ts";

/** Per-test timeout: several kubectl runs on a loaded 2-core machine. */
const TEST_TIMEOUT_MS = 60_000;

interface Json {
  // biome-ignore lint/suspicious/noExplicitAny: kubectl output and API objects are plain JSON under test
  [k: string]: any;
}

async function createNamespace(target: Target, name: string): Promise<void> {
  const r = await request(target, "POST", "/api/v1/namespaces", {
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
  });
  expect(r.code, r.text).toBe(201);
}

async function getJson(target: Target, path: string): Promise<{ code: number; body: Json }> {
  const r = await request(target, "GET", path);
  return { code: r.code, body: r.json as Json };
}

/** Table rows of kubectl output as arrays of cells (header first). */
function rows(stdout: string): string[][] {
  return stdout
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/));
}

function manifest(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function configMapYaml(name: string, data: Record<string, string>, labels?: string): string {
  const lines = Object.entries(data).map(([k, v]) => `  ${k}: "${v}"`);
  return [
    "apiVersion: v1",
    "kind: ConfigMap",
    "metadata:",
    `  name: ${name}`,
    ...(labels ? ["  labels:", `    ${labels}`] : []),
    "data:",
    ...lines,
    "",
  ].join("\n");
}

describe("kubectl 1.32 (default) against the apiserver", () => {
  let srv: E2eServer;
  let k: Kubectl;
  let proxy: RecordingProxy;
  let viaProxy: Kubectl;

  beforeAll(async () => {
    srv = await startE2eServer({ registry: registryWithWidgets() });
    k = new Kubectl(srv.kubeconfig);
    proxy = await startRecordingProxy(srv.url);
    const proxyConfig = join(srv.dir, "kubeconfig-proxy");
    await writeKubeconfig(proxyConfig, { server: proxy.url });
    viaProxy = new Kubectl(proxyConfig);
    // Warm kubectl's discovery cache once, so the concurrent commands below share it.
    await k.ok(["api-resources", "-o", "name"]);
  });
  afterAll(async () => {
    await k?.close();
    await viaProxy?.close();
    await proxy?.close();
    await srv?.close();
  });

  it("reports the server's version and uses the matching kubectl build", async () => {
    const v = JSON.parse(await k.ok(["version", "-o", "json"])) as Json;
    expect(v.serverVersion.major).toBe("1");
    expect(v.serverVersion.minor).toBe("32");
    // The dispatcher's build reports "32+".
    expect(v.clientVersion.minor).toMatch(/^32\b/);
  });

  it("answers auth whoami and auth can-i (no authorization: everything is allowed)", async () => {
    const who = JSON.parse(await k.ok(["auth", "whoami", "-o", "json"])) as Json;
    expect(who.status.userInfo.groups).toContain("system:authenticated");
    expect(who.status.userInfo.username).toBeTruthy();
    expect(await k.ok(["auth", "can-i", "delete", "secrets", "-n", "kube-system"])).toBe("yes\n");
    expect(await k.ok(["auth", "can-i", "get", "/healthz"])).toBe("yes\n");
    const rules = await k.ok(["auth", "can-i", "--list"]);
    expect(rules.split("\n")[1]).toMatch(/^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$/);
  });

  it(
    "gets as table, -o yaml, -o json, -o wide, -A and --show-labels",
    async () => {
      const ns = "get-forms";
      await createNamespace(srv.target, ns);
      await createNamespace(srv.target, `${ns}-b`);
      await Promise.all([
        k.ok(["-n", ns, "create", "cm", "alpha", "--from-literal=a=1", "--from-literal=b=2"]),
        k.ok(["-n", `${ns}-b`, "create", "cm", "beta", "--from-literal=x=y"]),
        k.ok(["-n", ns, "apply", "-f", "-"], {
          input: `apiVersion: ${WIDGET_API_VERSION}\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 7\n`,
        }),
      ]);
      await k.ok(["-n", ns, "label", "cm", "alpha", "tier=web", "env=dev"]);

      const [table, yamlOut, jsonOut, wide, plainWidget, all, labels, byLabel] = await Promise.all([
        k.ok(["-n", ns, "get", "cm"]),
        k.ok(["-n", ns, "get", "cm", "alpha", "-o", "yaml"]),
        k.ok(["-n", ns, "get", "cm", "-o", "json"]),
        k.ok(["-n", ns, "get", "widgets", "-o", "wide"]),
        k.ok(["-n", ns, "get", "wdg"]),
        k.ok(["get", "cm", "-A"]),
        k.ok(["-n", ns, "get", "cm", "--show-labels"]),
        k.ok(["get", "cm", "-A", "-l", "tier=web", "-o", "name"]),
      ]);

      expect(rows(table)).toEqual([
        ["NAME", "DATA", "AGE"],
        ["alpha", "2", expect.stringMatching(/^\d+s$/)],
      ]);

      const obj = parse(yamlOut) as Json;
      expect(obj).toMatchObject({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "alpha", namespace: ns, labels: { tier: "web", env: "dev" } },
        data: { a: "1", b: "2" },
      });
      expect(obj.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(obj.metadata.managedFields).toBeUndefined();

      const list = JSON.parse(jsonOut) as Json;
      expect(list.kind).toBe("List");
      expect(list.items.map((i: Json) => [i.kind, i.metadata.name, i.data])).toEqual([
        ["ConfigMap", "alpha", { a: "1", b: "2" }],
      ]);

      // The priority-1 column shows only with -o wide.
      expect(rows(plainWidget)[0]).toEqual(["NAME", "SIZE", "AGE"]);
      expect(rows(wide)[0]).toEqual(["NAME", "SIZE", "PHASE", "AGE"]);
      expect(rows(wide)[1].slice(0, 2)).toEqual(["w1", "7"]);

      // -A needs each row's object (PartialObjectMetadata) to print the namespace.
      const allRows = rows(all);
      expect(allRows[0]).toEqual(["NAMESPACE", "NAME", "DATA", "AGE"]);
      expect(allRows.map((r) => `${r[0]}/${r[1]}`)).toEqual(
        expect.arrayContaining([`${ns}/alpha`, `${ns}-b/beta`]),
      );

      const labelRows = rows(labels);
      expect(labelRows[0]).toEqual(["NAME", "DATA", "AGE", "LABELS"]);
      expect(labelRows[1][0]).toBe("alpha");
      expect(labelRows[1][3].split(",").sort()).toEqual(["env=dev", "tier=web"]);

      expect(byLabel.trim()).toBe("configmap/alpha");
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "get -w prints a create and a delete as they happen, then stops",
    async () => {
      const ns = "watching";
      await createNamespace(srv.target, ns);
      await k.ok(["-n", ns, "create", "cm", "seed"]);
      const watch = k.start(["-n", ns, "get", "cm", "-w", "--output-watch-events"]);
      await watch.waitFor(/ADDED\s+seed/);
      await k.ok(["-n", ns, "create", "cm", "newcomer", "--from-literal=k=v"]);
      await watch.waitFor(/ADDED\s+newcomer\s+1/);
      await k.ok(["-n", ns, "delete", "cm", "newcomer"]);
      await watch.waitFor(/DELETED\s+newcomer/);
      const plain = k.start(["-n", ns, "get", "cm", "seed", "-w"]);
      await plain.waitFor(/^seed\s+0\s+\d+s$/m);
      await k.ok(["-n", ns, "label", "cm", "seed", "touched=yes"]);
      await plain.waitFor(/^seed\s+0\s+\d+s\n.*seed\s+0/m);
      await watch.waitFor(/MODIFIED\s+seed/);
      const [ended] = await Promise.all([watch.stop(), plain.stop()]);
      expect(ended.stderr).toBe("");
      const events = ended.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/).slice(0, 2).join(" "));
      expect(events).toEqual([
        "EVENT NAME",
        "ADDED seed",
        "ADDED newcomer",
        "DELETED newcomer",
        // the label change to seed came after
        "MODIFIED seed",
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "applies client-side (create, unchanged, configured, pruned key) and server-side with conflicts",
    async () => {
      const ns = "applying";
      await createNamespace(srv.target, ns);
      const f1 = manifest(srv.dir, "apply1.yaml", configMapYaml("app", { a: "1", b: "2" }));
      const f2 = manifest(srv.dir, "apply2.yaml", configMapYaml("app", { a: "1", c: "3" }));
      expect(await k.ok(["-n", ns, "apply", "-f", f1])).toBe("configmap/app created\n");
      expect(await k.ok(["-n", ns, "apply", "-f", f1])).toBe("configmap/app unchanged\n");
      expect(await k.ok(["-n", ns, "apply", "-f", f2])).toBe("configmap/app configured\n");
      let cm = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/app`)).body;
      // Three-way merge: b was in the last applied configuration and is gone from the new one.
      expect(cm.data).toEqual({ a: "1", c: "3" });
      expect(
        JSON.parse(cm.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"])
          .data,
      ).toEqual({ a: "1", c: "3" });

      // Server-side apply takes over the fields from kubectl's client-side apply.
      expect(await k.ok(["-n", ns, "apply", "--server-side", "-f", f2])).toBe(
        "configmap/app serverside-applied\n",
      );
      const other = manifest(srv.dir, "apply3.yaml", configMapYaml("app", { a: "changed" }));
      const conflict = await k.fails([
        "-n",
        ns,
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        other,
      ]);
      expect(conflict.stderr).toMatch(/Apply failed with 1 conflict: conflict with "kubectl"/);
      expect(conflict.stderr).toContain(".data.a");
      cm = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/app`)).body;
      expect(cm.data.a).toBe("1");

      expect(
        await k.ok([
          "-n",
          ns,
          "apply",
          "--server-side",
          "--field-manager=other",
          "--force-conflicts",
          "-f",
          other,
        ]),
      ).toBe("configmap/app serverside-applied\n");
      const got = parse(
        await k.ok(["-n", ns, "get", "cm", "app", "-o", "yaml", "--show-managed-fields"]),
      ) as Json;
      expect(got.data).toEqual({ a: "changed", c: "3" });
      const managers = got.metadata.managedFields.map((m: Json) => `${m.manager}/${m.operation}`);
      expect(managers).toEqual(expect.arrayContaining(["other/Apply", "kubectl/Apply"]));
      const otherFields = got.metadata.managedFields.find((m: Json) => m.manager === "other");
      expect(Object.keys(otherFields.fieldsV1["f:data"])).toEqual(["f:a"]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "creates from -f, cm --from-literal, secret generic and namespace with protobuf bodies",
    async () => {
      const ns = "creating";
      const file = manifest(srv.dir, "create.yaml", configMapYaml("from-file", { k: "v" }));
      expect(await viaProxy.ok(["create", "namespace", ns])).toBe(`namespace/${ns} created\n`);
      const out = await Promise.all([
        viaProxy.ok(["-n", ns, "create", "-f", file]),
        viaProxy.ok([
          "-n",
          ns,
          "create",
          "cm",
          "literal",
          "--from-literal=greeting=hello world",
          "--from-literal=n=42",
        ]),
        viaProxy.ok([
          "-n",
          ns,
          "create",
          "secret",
          "generic",
          "creds",
          "--from-literal=password=s3cr=t",
        ]),
      ]);
      expect(out).toEqual([
        "configmap/from-file created\n",
        "configmap/literal created\n",
        "secret/creds created\n",
      ]);
      const posts = proxy.requests.filter((r) => r.method === "POST");
      const typeOf = (path: string) => posts.find((r) => r.url.startsWith(path))?.contentType;
      // kubectl 1.32 sends these three as protobuf (and does not fall back on 415).
      expect(typeOf("/api/v1/namespaces?")).toBe("application/vnd.kubernetes.protobuf");
      expect(typeOf(`/api/v1/namespaces/${ns}/secrets`)).toBe(
        "application/vnd.kubernetes.protobuf",
      );
      expect(
        posts
          .filter((r) => r.url.startsWith(`/api/v1/namespaces/${ns}/configmaps`))
          .map((r) => r.contentType)
          .sort(),
      ).toEqual(["application/json", "application/vnd.kubernetes.protobuf"]);

      const [nsObj, literal, secret, fromFile] = await Promise.all([
        getJson(srv.target, `/api/v1/namespaces/${ns}`),
        getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/literal`),
        getJson(srv.target, `/api/v1/namespaces/${ns}/secrets/creds`),
        getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/from-file`),
      ]);
      expect(nsObj.body.status.phase).toBe("Active");
      expect(literal.body.data).toEqual({ greeting: "hello world", n: "42" });
      expect(secret.body.type).toBe("Opaque");
      expect(Buffer.from(secret.body.data.password, "base64").toString()).toBe("s3cr=t");
      expect(fromFile.body.data).toEqual({ k: "v" });

      const again = await k.fails(["-n", ns, "create", "cm", "literal"]);
      expect(again.stderr).toContain(
        'failed to create configmap: configmaps "literal" already exists',
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "replaces, and prints the 409 message for a stale resourceVersion",
    async () => {
      const ns = "replacing";
      await createNamespace(srv.target, ns);
      await k.ok(["-n", ns, "create", "cm", "r", "--from-literal=v=1"]);
      const stale = parse(await k.ok(["-n", ns, "get", "cm", "r", "-o", "yaml"])) as Json;
      const fresh = { ...stale, data: { v: "2" } };
      expect(await k.ok(["-n", ns, "replace", "-f", "-"], { input: JSON.stringify(fresh) })).toBe(
        "configmap/r replaced\n",
      );
      const conflict = await k.fails(["-n", ns, "replace", "-f", "-"], {
        input: JSON.stringify({ ...stale, data: { v: "3" } }),
      });
      expect(conflict.stderr).toContain(
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "r": the object has been modified; please apply your changes to the latest version and try again',
      );
      const now = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/r`)).body;
      expect(now.data).toEqual({ v: "2" });
      // Without a resourceVersion, a built-in type takes an unconditional update.
      const { resourceVersion: _, ...meta } = stale.metadata;
      expect(
        await k.ok(["-n", ns, "replace", "-f", "-"], {
          input: JSON.stringify({ ...stale, metadata: meta, data: { v: "4" } }),
        }),
      ).toBe("configmap/r replaced\n");
      expect(
        (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/r`)).body.data,
      ).toEqual({ v: "4" });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "patches with --type merge, json (with test) and strategic",
    async () => {
      const ns = "patching";
      await createNamespace(srv.target, ns);
      await k.ok(["-n", ns, "create", "cm", "p", "--from-literal=a=1", "--from-literal=b=2"]);
      await k.ok(["-n", ns, "patch", "cm", "p", "-p", '{"metadata":{"finalizers":["e2e/one"]}}']);

      expect(
        await k.ok([
          "-n",
          ns,
          "patch",
          "cm",
          "p",
          "--type",
          "merge",
          "-p",
          '{"data":{"a":null,"m":"merged"}}',
        ]),
      ).toBe("configmap/p patched\n");
      expect(
        await k.ok([
          "-n",
          ns,
          "patch",
          "cm",
          "p",
          "--type",
          "json",
          "-p",
          '[{"op":"test","path":"/data/b","value":"2"},{"op":"replace","path":"/data/b","value":"json"}]',
        ]),
      ).toBe("configmap/p patched\n");
      const failedTest = await k.fails([
        "-n",
        ns,
        "patch",
        "cm",
        "p",
        "--type",
        "json",
        "-p",
        '[{"op":"test","path":"/data/b","value":"2"},{"op":"remove","path":"/data/m"}]',
      ]);
      expect(failedTest.stderr).toMatch(/test/);
      // Strategic merge: finalizers merge as a set (a merge patch would replace the list);
      // as in Kubernetes, items of the patch that the live list lacks come first.
      expect(
        await k.ok([
          "-n",
          ns,
          "patch",
          "cm",
          "p",
          "--type",
          "strategic",
          "-p",
          '{"metadata":{"finalizers":["e2e/two"]},"data":{"s":"strategic"}}',
        ]),
      ).toBe("configmap/p patched\n");
      let cm = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/p`)).body;
      expect(cm.data).toEqual({ b: "json", m: "merged", s: "strategic" });
      expect(cm.metadata.finalizers).toEqual(["e2e/two", "e2e/one"]);

      await k.ok([
        "-n",
        ns,
        "patch",
        "cm",
        "p",
        "--type",
        "merge",
        "-p",
        '{"metadata":{"finalizers":["e2e/three"]}}',
      ]);
      cm = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/p`)).body;
      expect(cm.metadata.finalizers).toEqual(["e2e/three"]);

      // A type with a schema but no Go struct tags: strategic merge follows the schema.
      await k.ok(["-n", ns, "apply", "-f", "-"], {
        input: `apiVersion: ${WIDGET_API_VERSION}\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n`,
      });
      await k.ok(["-n", ns, "patch", "widget", "w", "-p", '{"spec":{"size":2}}']);
      const w = (
        await getJson(srv.target, `/apis/${WIDGET_API_VERSION}/namespaces/${ns}/widgets/w`)
      ).body;
      expect(w.spec.size).toBe(2);
      await k.ok([
        "-n",
        ns,
        "patch",
        "cm",
        "p",
        "--type",
        "json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "labels and annotates (add, refuse overwrite, overwrite, remove)",
    async () => {
      const ns = "labelling";
      await createNamespace(srv.target, ns);
      await k.ok(["-n", ns, "create", "cm", "l"]);
      await Promise.all([
        k.ok(["-n", ns, "label", "cm", "l", "app=web", "tier=front"]),
        k.ok(["-n", ns, "annotate", "cm", "l", "note=first", "owner=team"]),
      ]);
      const refused = await k.fails(["-n", ns, "label", "cm", "l", "app=db"]);
      expect(refused.stderr).toContain("'app' already has a value (web)");
      await k.ok(["-n", ns, "label", "cm", "l", "app=db", "--overwrite"]);
      await k.ok(["-n", ns, "label", "cm", "l", "tier-"]);
      await k.ok(["-n", ns, "annotate", "cm", "l", "note=second", "--overwrite"]);
      await k.ok(["-n", ns, "annotate", "cm", "l", "owner-"]);
      const meta = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/l`)).body
        .metadata;
      expect(meta.labels).toEqual({ app: "db" });
      expect(meta.annotations).toEqual({ note: "second" });
      expect(await k.ok(["-n", ns, "get", "cm", "-l", "app=db", "-o", "name"])).toBe(
        "configmap/l\n",
      );
      expect(await k.run(["-n", ns, "get", "cm", "-l", "app=web", "-o", "name"])).toMatchObject({
        code: 0,
        stdout: "",
      });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "deletes (with finalizers: deletionTimestamp until they are removed), and dry-run=server changes nothing",
    async () => {
      const ns = "deleting";
      await createNamespace(srv.target, ns);
      await Promise.all([
        k.ok(["-n", ns, "create", "cm", "plain", "--from-literal=a=1"]),
        k.ok(["-n", ns, "apply", "-f", "-"], {
          input:
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [e2e.setpoint.dev/hold]\n",
        }),
      ]);

      // Dry runs: nothing is created, changed or deleted.
      const dryCreate = parse(
        await k.ok(["-n", ns, "create", "cm", "ghost", "--dry-run=server", "-o", "yaml"]),
      ) as Json;
      expect(dryCreate.metadata.name).toBe("ghost");
      expect(dryCreate.metadata.uid).toBeTruthy();
      expect(await k.ok(["-n", ns, "delete", "cm", "plain", "--dry-run=server"])).toBe(
        'configmap "plain" deleted (server dry run)\n',
      );
      await k.ok([
        "-n",
        ns,
        "patch",
        "cm",
        "plain",
        "--dry-run=server",
        "-p",
        '{"data":{"a":"2"}}',
      ]);
      const [ghost, plain] = await Promise.all([
        getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/ghost`),
        getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/plain`),
      ]);
      expect(ghost.code).toBe(404);
      expect(plain.body.data).toEqual({ a: "1" });

      expect(await k.ok(["-n", ns, "delete", "cm", "plain"])).toBe('configmap "plain" deleted\n');
      const gone = await k.fails(["-n", ns, "get", "cm", "plain"]);
      expect(gone.stderr).toContain('Error from server (NotFound): configmaps "plain" not found');

      expect(await k.ok(["-n", ns, "delete", "cm", "held", "--wait=false"])).toBe(
        'configmap "held" deleted\n',
      );
      const held = (await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/held`)).body;
      expect(held.metadata.deletionTimestamp).toBeTruthy();
      const waiting = k.start(["-n", ns, "wait", "cm/held", "--for=delete", "--timeout=30s"]);
      await k.ok([
        "-n",
        ns,
        "patch",
        "cm",
        "held",
        "--type",
        "merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
      const done = await waiting.exited;
      expect(done.code, done.stderr).toBe(0);
      expect((await getJson(srv.target, `/api/v1/namespaces/${ns}/configmaps/held`)).code).toBe(
        404,
      );
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "waits --for=jsonpath and --for=condition, honouring observedGeneration",
    async () => {
      const ns = "waiting";
      await createNamespace(srv.target, ns);
      const base = `/apis/${WIDGET_API_VERSION}/namespaces/${ns}/widgets/w`;
      await k.ok(["-n", ns, "apply", "-f", "-"], {
        input: `apiVersion: ${WIDGET_API_VERSION}\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n`,
      });
      // A controller's status write, through the status subresource.
      const writeStatus = async (generation: number, ready: string, phase: string) => {
        const r = await request(srv.target, "PATCH", `${base}/status`, {
          headers: { "Content-Type": "application/merge-patch+json" },
          body: {
            status: {
              phase,
              observedGeneration: generation,
              conditions: [{ type: "Ready", status: ready, observedGeneration: generation }],
            },
          },
        });
        expect(r.code, r.text).toBe(200);
        return r.json as Json;
      };

      const forPhase = k.start([
        "-n",
        ns,
        "wait",
        "widget/w",
        "--for=jsonpath={.status.phase}=Running",
        "--timeout=30s",
      ]);
      const forReady = k.start([
        "-n",
        ns,
        "wait",
        "widget/w",
        "--for=condition=Ready",
        "--timeout=30s",
      ]);
      await writeStatus(1, "False", "Starting");
      const afterStatus = await writeStatus(1, "True", "Running");
      expect(afterStatus.metadata.generation).toBe(1);
      for (const w of [forPhase, forReady]) {
        const r = await w.exited;
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toBe(`widget.${WIDGET_API_VERSION.split("/")[0]}/w condition met\n`);
      }

      // A spec change moves the generation: the Ready=True condition is now stale.
      await k.ok([
        "-n",
        ns,
        "patch",
        "widget",
        "w",
        "--type",
        "merge",
        "-p",
        '{"spec":{"size":2}}',
      ]);
      const w2 = (await getJson(srv.target, base)).body;
      expect(w2.metadata.generation).toBe(2);
      expect(w2.status.conditions[0]).toMatchObject({ status: "True", observedGeneration: 1 });
      const stale = await k.run([
        "-n",
        ns,
        "wait",
        "widget/w",
        "--for=condition=Ready",
        "--timeout=2s",
      ]);
      expect(stale.code).not.toBe(0);
      expect(stale.stderr).toContain("timed out waiting for the condition");

      const fresh = k.start([
        "-n",
        ns,
        "wait",
        "widget/w",
        "--for=condition=Ready",
        "--timeout=30s",
      ]);
      // A status write does not move the generation; once it observes generation 2, wait ends.
      expect((await writeStatus(2, "True", "Running")).metadata.generation).toBe(2);
      const r = await fresh.exited;
      expect(r.code, r.stderr).toBe(0);

      // Writes to the main resource ignore .status.
      await k.ok([
        "-n",
        ns,
        "patch",
        "widget",
        "w",
        "--type",
        "merge",
        "-p",
        '{"status":{"phase":"Hacked"}}',
      ]);
      expect((await getJson(srv.target, base)).body.status.phase).toBe("Running");
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "explains types and nested fields, and lists api-resources",
    async () => {
      const [cm, nested, lease, widget, resources] = await Promise.all([
        k.ok(["explain", "configmap"]),
        k.ok(["explain", "configmap.metadata.ownerReferences"]),
        k.ok(["explain", "lease.spec.holderIdentity"]),
        k.ok(["explain", "widget.spec.size"]),
        k.ok(["api-resources"]),
      ]);
      expect(cm).toMatch(/^KIND:\s+ConfigMap$/m);
      expect(cm).toMatch(/^VERSION:\s+v1$/m);
      expect(cm).toMatch(/^\s+data\s+<map\[string\]string>$/m);
      expect(cm).toMatch(/^\s+immutable\s+<boolean>$/m);
      expect(nested).toMatch(/^FIELD: ownerReferences <\[\]OwnerReference>$/m);
      expect(nested).toMatch(/^\s+uid\s+<string> -required-$/m);
      expect(lease).toMatch(/^GROUP:\s+coordination\.k8s\.io$/m);
      expect(lease).toMatch(/^FIELD: holderIdentity <string>$/m);
      expect(widget).toMatch(/How big the widget is/);

      const table = rows(resources);
      expect(table[0]).toEqual(["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]);
      const byName = new Map(table.slice(1).map((r) => [`${r[0]} ${r.at(-3)}`, r]));
      expect(byName.get("configmaps v1")).toEqual(["configmaps", "cm", "v1", "true", "ConfigMap"]);
      expect(byName.get("namespaces v1")).toEqual(["namespaces", "ns", "v1", "false", "Namespace"]);
      expect(byName.get("leases coordination.k8s.io/v1")).toEqual([
        "leases",
        "coordination.k8s.io/v1",
        "true",
        "Lease",
      ]);
      expect(byName.get("widgets e2e.setpoint.dev/v1")).toEqual([
        "widgets",
        "wdg",
        "e2e.setpoint.dev/v1",
        "true",
        "Widget",
      ]);
      expect(byName.has("events events.k8s.io/v1")).toBe(true);
      expect(byName.has("secrets v1")).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

for (const minor of [28, 33]) {
  describe(`kubectl 1.${minor} (smoke) against a server reporting 1.${minor}`, () => {
    let srv: E2eServer;
    let k: Kubectl;
    beforeAll(async () => {
      srv = await startE2eServer({ kubernetesMinor: minor });
      k = new Kubectl(srv.kubeconfig);
    });
    afterAll(async () => {
      await k?.close();
      await srv?.close();
    });

    it(
      "version, create, apply, get, watch, patch, delete, explain",
      async () => {
        const v = JSON.parse(await k.ok(["version", "-o", "json"])) as Json;
        expect(v.serverVersion.minor).toBe(String(minor));
        expect(v.clientVersion.minor).toMatch(new RegExp(`^${minor}\\b`));
        const ns = "smoke";
        expect(await k.ok(["create", "namespace", ns])).toBe(`namespace/${ns} created\n`);
        const watch = k.start(["-n", ns, "get", "cm", "-w", "--output-watch-events"]);
        const [created, secret, applied] = await Promise.all([
          k.ok(["-n", ns, "create", "cm", "lit", "--from-literal=a=1"]),
          k.ok(["-n", ns, "create", "secret", "generic", "sec", "--from-literal=p=q"]),
          k.ok(["-n", ns, "apply", "-f", "-"], {
            input: configMapYaml("applied", { x: "1" }, "app: smoke"),
          }),
        ]);
        expect([created, secret, applied]).toEqual([
          "configmap/lit created\n",
          "secret/sec created\n",
          "configmap/applied created\n",
        ]);
        expect(
          await k.ok(["-n", ns, "apply", "-f", "-"], {
            input: configMapYaml("applied", { x: "2" }, "app: smoke"),
          }),
        ).toBe("configmap/applied configured\n");
        await k.ok(["-n", ns, "patch", "cm", "lit", "--type", "merge", "-p", '{"data":{"b":"2"}}']);
        await watch.waitFor(/ADDED\s+lit/);
        await watch.waitFor(/ADDED\s+applied/);

        const [wide, all, yamlOut, explain] = await Promise.all([
          k.ok(["-n", ns, "get", "cm", "-o", "wide", "--show-labels"]),
          k.ok(["get", "ns", "-A"]),
          k.ok(["-n", ns, "get", "cm", "lit", "-o", "yaml"]),
          k.ok(["explain", "configmap.data"]),
        ]);
        const wideRows = rows(wide);
        expect(wideRows[0]).toEqual(["NAME", "DATA", "AGE", "LABELS"]);
        expect(wideRows.slice(1).map((r) => [r[0], r[1], r[3]])).toEqual(
          expect.arrayContaining([
            ["applied", "1", "app=smoke"],
            ["lit", "2", "<none>"],
          ]),
        );
        expect(rows(all).map((r) => r[0])).toEqual(
          expect.arrayContaining(["NAME", "default", "kube-system", ns]),
        );
        expect((parse(yamlOut) as Json).data).toEqual({ a: "1", b: "2" });
        expect(explain).toMatch(/^FIELD:\s+data <map\[string\]string>$/m);

        expect(await k.ok(["-n", ns, "delete", "cm", "lit"])).toBe('configmap "lit" deleted\n');
        await watch.waitFor(/DELETED\s+lit/);
        const stopped = await watch.stop();
        expect(stopped.stderr).toBe("");
      },
      TEST_TIMEOUT_MS,
    );
  });
}
