/**
 * Pod volumes against a real apiserver, a real agent and real processes: emptyDir,
 * configMap (items, mode), secret (defaultMode), downwardAPI (labels, name,
 * resourceFieldRef) and projected files written by the atomic writer (`..data`
 * link, each key a link through it), found by the process through SETPOINT_ROOT
 * and SETPOINT_VOLUME_*; an update of the ConfigMap swaps `..data` and the
 * process reads the new content; a label change rewrites the labels file; a
 * missing ConfigMap keeps the container ContainerCreating with the kubelet's
 * FailedMount event until it exists; the Pod's volumes go with the Pod. A
 * projected serviceAccountToken is a token the apiserver's TokenReview accepts
 * (bound to the Pod, with the volume's audience), renewed once 80% of its
 * validity has passed on the agent's (injected) clock.
 */
import { existsSync, lstatSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Pod } from "@setpoint/api";
import { Client } from "@setpoint/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../../src/agent/index.ts";
import { podLogDir, volumesDir } from "../../src/agent/pods/index.ts";
import { Kubectl } from "../e2e/helpers/kubectl.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { eventually, removeTempDirs, tempDir, testImageStore } from "./helpers.ts";

const POD = { apiVersion: "v1", kind: "Pod" } as const;
const CM = { apiVersion: "v1", kind: "ConfigMap" } as const;
let env: TestServer;
let client: Client;
let kubectl: Kubectl;
let dataDir: string;
let agent: Agent;
/** How far the agent's token clock is ahead of the real one. */
let clockOffset = 0;

beforeAll(async () => {
  // Authentication on: TokenReview judges the projected tokens.
  env = await startTestServer({ tls: true });
  client = new Client(env.config);
  kubectl = new Kubectl(env.kubeconfigPath);
  dataDir = tempDir("setpoint-agent-volumes-");
  agent = new Agent({
    client,
    nodeName: "node-v",
    dataDir,
    imageDir: testImageStore().root,
    podRange: 81,
    restartBackoff: { initialMs: 200, maxMs: 1_000 },
    volumeSyncMs: 300,
    clock: () => Date.now() + clockOffset,
    serviceProxy: false,
  });
  await agent.start();
  await agent.waitForSync();
});

afterAll(async () => {
  await agent?.stop({ stopPods: true });
  await kubectl?.close();
  client?.close();
  await env?.stop();
  removeTempDirs();
});

const read = (p: string) => readFileSync(p, "utf8");
const mode = (p: string) => statSync(p).mode & 0o777;

function podDirOf(pod: Pod): string {
  return podLogDir(dataDir, "default", pod.metadata.name ?? "", pod.metadata.uid ?? "");
}

/** A shell Pod that copies the mounted greeting into its emptyDir every 100 ms. */
function volumePod(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default", labels: { app: "vol", tier: "one" } },
    spec: {
      nodeName: "node-v",
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: "main",
          image: "shell:1",
          command: ["sh", "-c"],
          args: [
            'while true; do cat "$SETPOINT_ROOT/etc/config/greeting.txt" > "$SETPOINT_VOLUME_CACHE/seen.tmp" && mv "$SETPOINT_VOLUME_CACHE/seen.tmp" "$SETPOINT_VOLUME_CACHE/seen"; sleep 0.1; done',
          ],
          resources: { limits: { memory: "64Mi" } },
          volumeMounts: [
            { name: "config", mountPath: "/etc/config", readOnly: true },
            { name: "creds", mountPath: "/etc/creds", readOnly: true },
            { name: "cache", mountPath: "/cache" },
            { name: "info", mountPath: "/etc/podinfo" },
            { name: "all", mountPath: "/etc/all" },
          ],
        },
      ],
      volumes: [
        {
          name: "config",
          configMap: {
            name: "app-config",
            items: [
              { key: "greeting", path: "greeting.txt" },
              { key: "nested", path: "sub/nested.conf", mode: 0o600 },
              { key: "bin", path: "bin" },
            ],
          },
        },
        { name: "creds", secret: { secretName: "app-secret", defaultMode: 0o400 } },
        { name: "cache", emptyDir: {} },
        {
          name: "info",
          downwardAPI: {
            items: [
              { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
              { path: "name", fieldRef: { fieldPath: "metadata.name" } },
              {
                path: "mem",
                resourceFieldRef: {
                  containerName: "main",
                  resource: "limits.memory",
                  divisor: "1Mi",
                },
              },
            ],
          },
        },
        {
          name: "all",
          projected: {
            sources: [
              { configMap: { name: "app-config", items: [{ key: "greeting", path: "g" }] } },
              { secret: { name: "app-secret" } },
              {
                downwardAPI: {
                  items: [{ path: "ns", fieldRef: { fieldPath: "metadata.namespace" } }],
                },
              },
              { configMap: { name: "not-there", optional: true } },
            ],
          },
        },
      ],
    },
  };
}

describe("Pod volumes", () => {
  it("writes configMap, secret, downwardAPI, projected and emptyDir volumes the process finds", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "app-config", namespace: "default" },
      data: { greeting: "hello v1", nested: "a=1", unused: "x" },
      binaryData: { bin: Buffer.from([0xff, 0x00, 0x80]).toString("base64") },
    } as unknown as Pod);
    await client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "app-secret", namespace: "default" },
      stringData: { password: "s3cret" },
      data: { blob: Buffer.from([0xfe, 0x01, 0xc3]).toString("base64") },
    } as unknown as Pod);
    const created = await client.create(volumePod("vol-1"));
    const dir = podDirOf(created);
    const vols = volumesDir(dir);
    const seen = join(vols, "cache", "seen");
    await eventually(
      "the process to copy the greeting",
      () => existsSync(seen) && read(seen) === "hello v1",
      30_000,
    );

    // configMap: items choose keys and paths; the kubelet's layout and modes.
    const config = join(vols, "config");
    expect(lstatSync(join(config, "..data")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(config, "..data"))).toMatch(
      /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/,
    );
    expect(readlinkSync(join(config, "greeting.txt"))).toBe("..data/greeting.txt");
    expect(readlinkSync(join(config, "sub"))).toBe("..data/sub");
    expect(read(join(config, "greeting.txt"))).toBe("hello v1");
    expect(read(join(config, "sub/nested.conf"))).toBe("a=1");
    expect(mode(join(config, "greeting.txt"))).toBe(0o644);
    expect(mode(join(config, "sub/nested.conf"))).toBe(0o600);
    expect(existsSync(join(config, "unused"))).toBe(false);
    // secret: every key, defaultMode.
    expect(read(join(vols, "creds", "password"))).toBe("s3cret");
    expect(mode(join(vols, "creds", "password"))).toBe(0o400);
    // Bytes that are not text are written as bytes.
    expect(readFileSync(join(vols, "creds", "blob"))).toEqual(Buffer.from([0xfe, 0x01, 0xc3]));
    expect(readFileSync(join(config, "bin"))).toEqual(Buffer.from([0xff, 0x00, 0x80]));
    // downwardAPI.
    expect(read(join(vols, "info", "labels"))).toBe('app="vol"\ntier="one"');
    expect(read(join(vols, "info", "name"))).toBe("vol-1");
    expect(read(join(vols, "info", "mem"))).toBe("64");
    // projected: the sources together; an optional missing one skipped.
    expect(read(join(vols, "all", "g"))).toBe("hello v1");
    expect(read(join(vols, "all", "password"))).toBe("s3cret");
    expect(read(join(vols, "all", "ns"))).toBe("default");
    // The container's root links each mountPath to its volume.
    const root = join(dir, "_root", "main");
    expect(read(join(root, "etc/creds/password"))).toBe("s3cret");
    expect(read(join(root, "etc/podinfo/name"))).toBe("vol-1");
    // The process's environment names them.
    const worker = [...agent.workers.values()].find((w) => w.record.pod.metadata.name === "vol-1");
    const pid = worker?.record.containers[0].process?.pid;
    const environ = read(`/proc/${pid}/environ`).split("\0");
    expect(environ).toContain(`SETPOINT_ROOT=${root}`);
    expect(environ).toContain(`SETPOINT_VOLUME_CACHE=${join(vols, "cache")}`);
    expect(environ).toContain(`SETPOINT_VOLUME_CONFIG=${config}`);
  });

  it("swaps ..data when the ConfigMap changes, and the process reads the new content", async () => {
    const vols = volumesDir(podDirOf(await client.get<Pod>(POD, "vol-1", "default")));
    const config = join(vols, "config");
    const before = readlinkSync(join(config, "..data"));
    const cm = await client.get(CM, "app-config", "default");
    await client.update({ ...cm, data: { greeting: "hello v2", nested: "a=2" } } as unknown as Pod);
    await eventually(
      "the process to read the new greeting",
      () => read(join(vols, "cache", "seen")) === "hello v2",
      30_000,
    );
    expect(readlinkSync(join(config, "..data"))).not.toBe(before);
    expect(existsSync(join(config, before))).toBe(false);
    expect(read(join(config, "sub/nested.conf"))).toBe("a=2");
    expect(read(join(vols, "all", "g"))).toBe("hello v2");
  });

  it("rewrites the downwardAPI labels file when the Pod's labels change", async () => {
    const vols = volumesDir(podDirOf(await client.get<Pod>(POD, "vol-1", "default")));
    const r = await kubectl.run(["label", "pod", "vol-1", "--overwrite", "tier=two", "extra=yes"]);
    expect(r.code, r.stderr).toBe(0);
    await eventually("the labels file", () => {
      const text = read(join(vols, "info", "labels"));
      return text.includes('tier="two"') ? text : undefined;
    });
    expect(read(join(vols, "info", "labels"))).toBe('app="vol"\nextra="yes"\ntier="two"');
  });

  it("keeps a container ContainerCreating with FailedMount while its ConfigMap is missing", async () => {
    const pod = volumePod("vol-missing");
    pod.spec!.volumes![0].configMap!.name = "later-config";
    await client.create(pod);
    const out = await eventually("ContainerCreating", async () => {
      const r = await kubectl.run(["get", "pod", "vol-missing", "--no-headers"]);
      return /ContainerCreating/.test(r.stdout) ? r.stdout : undefined;
    });
    expect(out).toMatch(/^vol-missing\s+0\/1\s+ContainerCreating\s+0/);
    const events = await eventually("a FailedMount event", async () => {
      const r = await kubectl.run([
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=vol-missing",
      ]);
      return r.stdout.includes("FailedMount") ? r.stdout : undefined;
    });
    expect(events).toMatch(
      /Warning\s+FailedMount\s+pod\/vol-missing\s+MountVolume\.SetUp failed for volume "config" : configmap "later-config" not found/,
    );
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "later-config", namespace: "default" },
      data: { greeting: "late", nested: "n" },
      binaryData: { bin: "AA==" },
    } as unknown as Pod);
    await eventually(
      "Running",
      async () => {
        const p = await client.get<Pod>(POD, "vol-missing", "default");
        return p.status?.containerStatuses?.[0].state?.running ? p : undefined;
      },
      30_000,
    );
  });

  it("removes the Pod's volumes, emptyDir with them, when the Pod goes", async () => {
    const pod = await client.get<Pod>(POD, "vol-1", "default");
    const vols = volumesDir(podDirOf(pod));
    expect(existsSync(join(vols, "cache", "seen"))).toBe(true);
    const r = await kubectl.run(["delete", "pod", "vol-1", "vol-missing", "--wait=true"]);
    expect(r.stderr).toBe("");
    await eventually("the volumes removed", () => !existsSync(vols));
    expect(existsSync(join(podDirOf(pod), "_root"))).toBe(false);
  });

  it("projects ServiceAccount tokens from the TokenRequest API and renews them at 80% of their validity", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "runner", namespace: "default" },
    } as unknown as Pod);
    const pod: Pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "tok", namespace: "default" },
      spec: {
        nodeName: "node-v",
        serviceAccountName: "runner",
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: "main",
            image: "shell:1",
            command: ["sh", "-c", "exec sleep 600"],
            volumeMounts: [{ name: "tokens", mountPath: "/var/run/secrets/tokens" }],
          },
        ],
        volumes: [
          {
            name: "tokens",
            projected: {
              sources: [
                { serviceAccountToken: { path: "api-token" } },
                {
                  serviceAccountToken: {
                    path: "vault-token",
                    audience: "vault",
                    expirationSeconds: 600,
                  },
                },
              ],
            },
          },
        ],
      },
    };
    const created = await client.create(pod);
    const dir = join(volumesDir(podDirOf(created)), "tokens");
    const running = await eventually(
      "Running",
      async () => {
        const p = await client.get<Pod>(POD, "tok", "default");
        return p.status?.containerStatuses?.[0].state?.running ? p : undefined;
      },
      30_000,
    );
    expect(running.metadata.uid).toBe(created.metadata.uid);
    const review = async (token: string, audiences?: string[]) =>
      JSON.parse(
        await kubectl.ok(["create", "-f", "-", "-o", "json"], {
          input: JSON.stringify({
            apiVersion: "authentication.k8s.io/v1",
            kind: "TokenReview",
            spec: { token, ...(audiences ? { audiences } : {}) },
          }),
        }),
      ) as {
        status?: {
          authenticated?: boolean;
          audiences?: string[];
          user?: { username?: string; extra?: Record<string, string[]> };
        };
      };
    const apiToken = read(join(dir, "api-token"));
    const vaultToken = read(join(dir, "vault-token"));
    expect(mode(join(dir, "api-token"))).toBe(0o644);
    const r1 = await review(apiToken);
    expect(r1.status?.authenticated).toBe(true);
    expect(r1.status?.user?.username).toBe("system:serviceaccount:default:runner");
    // Bound to the Pod (its claims name it; TokenReview checks it still exists).
    const claims = JSON.parse(Buffer.from(apiToken.split(".")[1], "base64url").toString());
    expect(claims["kubernetes.io"].pod).toEqual({ name: "tok", uid: created.metadata.uid });
    const r2 = await review(vaultToken, ["vault"]);
    expect(r2.status?.authenticated).toBe(true);
    expect(r2.status?.audiences).toEqual(["vault"]);
    // Not yet due: nothing is renewed.
    const data = readlinkSync(join(dir, "..data"));
    await new Promise((r) => setTimeout(r, 1_000));
    expect(readlinkSync(join(dir, "..data"))).toBe(data);
    // 80% of the 600 s token's validity passes on the agent's clock: it is renewed, the other is not.
    clockOffset = 0.8 * 600_000 + 1_000;
    const renewed = await eventually(
      "the vault token renewed",
      () => {
        const t = read(join(dir, "vault-token"));
        return t !== vaultToken ? t : undefined;
      },
      30_000,
    );
    expect(read(join(dir, "api-token"))).toBe(apiToken);
    expect(readlinkSync(join(dir, "..data"))).not.toBe(data);
    expect((await review(renewed, ["vault"])).status?.authenticated).toBe(true);
    clockOffset = 0;
    await kubectl.run(["delete", "pod", "tok", "--wait=true"]);
    await eventually("the token volume removed", () => !existsSync(dir));
  });
});
