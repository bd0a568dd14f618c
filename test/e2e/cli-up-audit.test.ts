/**
 * `setpoint up --audit-policy-file --audit-log-path` as a user runs it: a real
 * process writing the audit log kubectl's requests leave (Secrets at Metadata, so
 * never their data), the log's directory created, every event flushed by the time
 * SIGTERM has ended the process; an invalid policy is a usage error (exit 2) that
 * names the problem, and `up --help` documents the flags.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { request } from "./helpers/http.ts";
import { Kubectl } from "./helpers/kubectl.ts";
import { runSetpoint, type SetpointProcess, startSetpoint } from "./helpers/setpoint.ts";

const TEST_TIMEOUT_MS = 90_000;

const POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  userGroups: ["system:masters"]
  users: ["system:apiserver"]
- level: Metadata
  resources:
  - group: ""
    resources: [secrets]
- level: None
`;

interface AuditEvent {
  level: string;
  auditID: string;
  stage: string;
  verb: string;
  user: { username?: string };
  objectRef?: Record<string, string>;
  responseStatus?: { code?: number };
  requestObject?: unknown;
  responseObject?: unknown;
}

describe("setpoint up with an audit log", () => {
  const dir = mkdtempSync(join(tmpdir(), "setpoint-up-audit-"));
  const policyFile = join(dir, "policy.yaml");
  writeFileSync(policyFile, POLICY);
  const badPolicy = join(dir, "bad.yaml");
  writeFileSync(
    badPolicy,
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: [healthz]\n",
  );
  const logPath = join(dir, "logs", "audit.log");
  let up: SetpointProcess | undefined;
  let kubectl: Kubectl | undefined;
  afterAll(async () => {
    await kubectl?.close();
    await up?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    "logs kubectl's Secret requests at Metadata, without the data, and flushes on SIGTERM",
    async () => {
      up = await startSetpoint([
        "--data-dir",
        join(dir, "data"),
        "--no-controllers",
        "--audit-policy-file",
        policyFile,
        "--audit-log-path",
        logPath,
        "--audit-log-maxsize",
        "1",
      ]);
      kubectl = new Kubectl(up.kubeconfig);
      await kubectl.ok(["create", "secret", "generic", "pw", "--from-literal=password=hunter2"]);
      await kubectl.ok(["get", "secret", "pw", "-o", "yaml"]);
      const version = await request(up.target, "GET", "/version");
      expect(version.headers["audit-id"]).toMatch(/^[0-9a-f-]{36}$/);
      const exit = await up.stop();
      expect(exit.code).toBe(0);

      const text = readFileSync(logPath, "utf8");
      expect(text).not.toContain("hunter2");
      expect(text).not.toContain(Buffer.from("hunter2").toString("base64"));
      const events = text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as AuditEvent);
      const secrets = events.filter((e) => e.objectRef?.resource === "secrets");
      expect(secrets.map((e) => [e.verb, e.stage, e.level, e.responseStatus?.code])).toEqual([
        ["create", "RequestReceived", "Metadata", undefined],
        ["create", "ResponseComplete", "Metadata", 201],
        ["get", "RequestReceived", "Metadata", undefined],
        ["get", "ResponseComplete", "Metadata", 200],
      ]);
      expect(secrets[0]!.auditID).toBe(secrets[1]!.auditID);
      expect(secrets[2]!.auditID).toBe(secrets[3]!.auditID);
      expect(secrets[0]!.auditID).not.toBe(secrets[2]!.auditID);
      for (const e of secrets) {
        expect(e.user.username).toBe("admin");
        // A create's name comes from its body, read after RequestReceived.
        const named = e.verb !== "create" || e.stage !== "RequestReceived";
        expect(e.objectRef).toEqual({
          resource: "secrets",
          namespace: "default",
          ...(named ? { name: "pw" } : {}),
          apiVersion: "v1",
        });
        expect(e).not.toHaveProperty("requestObject");
        expect(e).not.toHaveProperty("responseObject");
      }
      // Nothing but the Secrets: the rest of the policy says None.
      expect(events).toHaveLength(4);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'writes the events to stdout with --audit-log-path "-"',
    async () => {
      const out = await startSetpoint([
        "--data-dir",
        join(dir, "data-stdout"),
        "--no-controllers",
        "--audit-policy-file",
        policyFile,
        "--audit-log-path",
        "-",
      ]);
      try {
        const k = new Kubectl(out.kubeconfig);
        try {
          await k.ok(["get", "secrets", "-n", "kube-system"]);
        } finally {
          await k.close();
        }
      } finally {
        const exit = await out.stop();
        expect(exit.code).toBe(0);
      }
      const events = out
        .stdout()
        .split("\n")
        .filter((l) => l.startsWith("{") && l.includes('"audit.k8s.io/v1"'))
        .map((l) => JSON.parse(l) as AuditEvent);
      expect(events.map((e) => [e.verb, e.stage, e.objectRef?.namespace])).toEqual([
        ["list", "RequestReceived", "kube-system"],
        ["list", "ResponseComplete", "kube-system"],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "refuses an invalid policy as a usage error, and documents the flags",
    async () => {
      const bad = await runSetpoint([
        "up",
        "--data-dir",
        join(dir, "bad-data"),
        "--listen",
        "127.0.0.1:0",
        "--no-agent",
        "--no-gateway",
        "--audit-policy-file",
        badPolicy,
        "--audit-log-path",
        join(dir, "bad.log"),
      ]);
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toContain(
        `--audit-policy-file: invalid audit policy ${badPolicy}: rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character`,
      );
      expect(bad.stderr).not.toMatch(/^\s+at /m);
      expect(bad.stdout).not.toContain("Setpoint is serving");
      const unwritable = await runSetpoint([
        "up",
        "--data-dir",
        join(dir, "bad-data"),
        "--no-agent",
        "--no-gateway",
        "--audit-policy-file",
        policyFile,
        "--audit-log-path",
        join(policyFile, "audit.log"),
      ]);
      expect(unwritable.code, unwritable.stderr).toBe(2);
      expect(unwritable.stderr).toMatch(/--audit-log-path: .*(ENOTDIR|EEXIST)/);
      const help = await runSetpoint(["up", "--help"]);
      for (const flag of [
        "--audit-policy-file",
        "--audit-log-path",
        "--audit-log-maxsize",
        "--audit-log-maxbackup",
        "--audit-log-maxage",
      ]) {
        expect(help.stdout).toContain(flag);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
