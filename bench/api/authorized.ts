/**
 * Creates with RBAC deciding, part of the API benchmark (`npm run bench:api`
 * calls `authorizedPhase`; BENCH_PHASES=authorized runs it alone).
 *
 * One API server with authentication on holds 1,000 Roles and 1,000
 * RoleBindings (each granting another user something, spread over 10
 * namespaces), and one RoleBinding that lets `bench-user` create ConfigMaps in
 * its namespace. In alternating slices, with the same keep-alive clients and
 * bodies: 1 KiB ConfigMap creates as `bench-user` (decided by RBAC among all
 * those bindings) beside the same creates as the admin (`system:masters`, which
 * RBAC does not look at). Goal: the user's rate at least 0.9x the admin's.
 */
import type { ChildServer } from "../lib/child-server.ts";
import { HttpClient } from "../lib/http-load.ts";
import type { Row } from "../lib/table.ts";
import { callersFor, combine, type Rate } from "../lib/timing.ts";

export const AUTHORIZED_GOAL = 0.9;
/** Roles and RoleBindings besides the user's own. */
const POLICY_OBJECTS = 1000;
const POLICY_NAMESPACES = 10;
const CLIENTS = 50;
const ROUNDS = 4;
const NS = "bench-authz";
/** BENCH_USER_TOKEN of bench/lib/api-child.ts (which runs its server when imported). */
const USER_TOKEN = "bench-user-token";

const rbac = "/apis/rbac.authorization.k8s.io/v1";

function body(obj: unknown): string {
  return JSON.stringify(obj);
}

function configMap(name: string): string {
  return body({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NS },
    data: { payload: "x".repeat(1000) },
  });
}

async function fillPolicy(admin: HttpClient): Promise<void> {
  const namespaces = [
    NS,
    ...Array.from({ length: POLICY_NAMESPACES }, (_, i) => `bench-authz-${i}`),
  ];
  for (const ns of namespaces) {
    await admin.expect(
      201,
      "POST",
      "/api/v1/namespaces",
      body({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }),
    );
  }
  const jobs: (() => Promise<unknown>)[] = [];
  for (let i = 0; i < POLICY_OBJECTS; i++) {
    const ns = `bench-authz-${i % POLICY_NAMESPACES}`;
    jobs.push(async () => {
      await admin.expect(
        201,
        "POST",
        `${rbac}/namespaces/${ns}/roles`,
        body({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: `role-${i}`, namespace: ns },
          rules: [
            { apiGroups: [""], resources: ["configmaps", "secrets"], verbs: ["get", "list"] },
          ],
        }),
      );
      await admin.expect(
        201,
        "POST",
        `${rbac}/namespaces/${ns}/rolebindings`,
        body({
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: `binding-${i}`, namespace: ns },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `role-${i}` },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: `user-${i}` }],
        }),
      );
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
  await admin.expect(
    201,
    "POST",
    `${rbac}/namespaces/${NS}/roles`,
    body({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "writer", namespace: NS },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["create"] }],
    }),
  );
  await admin.expect(
    201,
    "POST",
    `${rbac}/namespaces/${NS}/rolebindings`,
    body({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "writer", namespace: NS },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "writer" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "bench-user" }],
    }),
  );
}

export async function authorizedPhase(
  api: ChildServer,
  opts: { durationMs: number; log: (m: string) => void },
): Promise<Row[]> {
  const admin = new HttpClient(api.url, {
    ca: api.ca,
    sockets: CLIENTS,
    ...(api.token ? { token: api.token } : {}),
  });
  const user = new HttpClient(api.url, { ca: api.ca, sockets: CLIENTS, token: USER_TOKEN });
  try {
    opts.log(`filling ${POLICY_OBJECTS} Roles and ${POLICY_OBJECTS} RoleBindings`);
    await fillPolicy(admin);
    // The binding reaches the authorizer through the watch cache: wait for it.
    for (let tries = 0; ; tries++) {
      const r = await user.send("POST", `/api/v1/namespaces/${NS}/configmaps`, configMap("probe"));
      if (r.code === 201) break;
      if (tries > 200) throw new Error(`bench-user cannot create: ${r.code} ${r.body}`);
      await new Promise((res) => setTimeout(res, 25));
    }
    // The user may not do what it was not granted.
    const denied = await user.send("GET", "/api/v1/namespaces/bench-authz-0/secrets");
    if (denied.code !== 403) throw new Error(`bench-user listed secrets: ${denied.code}`);
    let seq = 0;
    const post = (c: HttpClient) => () =>
      c.expect(201, "POST", `/api/v1/namespaces/${NS}/configmaps`, configMap(`c-${seq++}`));
    for (const c of [admin, user]) await callersFor(CLIENTS, 500, post(c));
    const rates: { admin: Rate[]; user: Rate[] } = { admin: [], user: [] };
    const slice = opts.durationMs / ROUNDS;
    for (let round = 0; round < ROUNDS; round++) {
      rates.admin.push(await callersFor(CLIENTS, slice, post(admin)));
      rates.user.push(await callersFor(CLIENTS, slice, post(user)));
    }
    const a = combine(rates.admin);
    const u = combine(rates.user);
    return [
      {
        backend: "api, RBAC (user among 1,000 roles and bindings)",
        metric: `creates/s, ${CLIENTS} keep-alive clients, 1 KiB`,
        value: u.perSecond,
        unit: "/s",
        baseline: a.perSecond,
        baselineLabel: "same creates as the admin (system:masters)",
        better: "higher",
        goal: { text: `>= ${AUTHORIZED_GOAL}x`, met: u.perSecond >= AUTHORIZED_GOAL * a.perSecond },
      },
    ];
  } finally {
    admin.close();
    user.close();
  }
}
