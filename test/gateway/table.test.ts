/**
 * The route table without a server: which route a host and path reach (Kubernetes'
 * Ingress precedence), which Ingresses belong to the class, and how a table built
 * from incomplete objects keeps the previous one's endpoints and certificates.
 */
import type { EndpointSlice, Ingress, IngressClass, KubeObject, Service } from "@setpoint/api";
import { describe, expect, it } from "vitest";
import { buildTable, CompiledTable, type TableInputs } from "../../src/gateway/index.ts";

type PathSpec = [path: string, type: "Exact" | "Prefix" | "ImplementationSpecific", svc: string];

function ingress(
  name: string,
  rules: { host?: string; paths: PathSpec[] }[],
  extra: { created?: string; className?: string | null; defaultSvc?: string; tls?: unknown[] } = {},
): Ingress {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: {
      name,
      namespace: "ns",
      creationTimestamp: extra.created ?? "2026-01-01T00:00:00Z",
    },
    spec: {
      ...(extra.className === null ? {} : { ingressClassName: extra.className ?? "setpoint" }),
      ...(extra.defaultSvc
        ? { defaultBackend: { service: { name: extra.defaultSvc, port: { number: 80 } } } }
        : {}),
      rules: rules.map((r) => ({
        host: r.host,
        http: {
          paths: r.paths.map(([path, pathType, svc]) => ({
            path,
            pathType,
            backend: { service: { name: svc, port: { number: 80 } } },
          })),
        },
      })),
      tls: extra.tls as never,
    },
  };
}

function service(name: string): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "ns" },
    spec: { ports: [{ name: "http", port: 80, targetPort: 8080 }] },
  };
}

function slice(
  svc: string,
  ips: { ip: string; ready?: boolean; terminating?: boolean }[],
): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${svc}-abc`,
      namespace: "ns",
      labels: { "kubernetes.io/service-name": svc },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints: ips.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, terminating: e.terminating ?? false },
    })),
  };
}

function inputs(
  ingresses: Ingress[],
  svcs: string[],
  extra: Partial<TableInputs> = {},
): TableInputs {
  return {
    className: "setpoint",
    ingresses,
    classes: [],
    services: svcs.map(service),
    slices: svcs.map((s, i) => slice(s, [{ ip: `10.0.0.${i + 1}` }])),
    secrets: [],
    ...extra,
  };
}

describe("route precedence", () => {
  const svcs = [
    "exact-foo",
    "prefix-foo",
    "prefix-foo-bar",
    "root",
    "wild",
    "any-host",
    "impl",
    "older",
    "newer",
    "dflt",
  ];
  const t = new CompiledTable(
    buildTable(
      inputs(
        [
          ingress(
            "a",
            [
              {
                host: "shop.example.com",
                paths: [
                  ["/foo", "Exact", "exact-foo"],
                  ["/foo", "Prefix", "prefix-foo"],
                  ["/foo/bar/", "Prefix", "prefix-foo-bar"],
                  ["/", "Prefix", "root"],
                  ["/impl", "ImplementationSpecific", "impl"],
                ],
              },
              { host: "*.example.com", paths: [["/", "Prefix", "wild"]] },
              { paths: [["/api", "Prefix", "any-host"]] },
              { host: "tie.example.com", paths: [["/x", "Prefix", "older"]] },
            ],
            { created: "2026-01-01T00:00:00Z", defaultSvc: "dflt" },
          ),
          ingress("b", [{ host: "tie.example.com", paths: [["/x", "Prefix", "newer"]] }], {
            created: "2026-01-02T00:00:00Z",
          }),
        ],
        svcs,
      ),
    ).table,
  );
  const cases: [host: string, path: string, want: string | undefined][] = [
    ["shop.example.com", "/foo", "exact-foo"], // Exact beats Prefix of the same length
    ["SHOP.example.com", "/foo/", "prefix-foo"], // hosts are case-insensitive
    ["shop.example.com", "/foo/baz", "prefix-foo"],
    ["shop.example.com", "/foo/bar", "prefix-foo-bar"], // trailing slash of the rule ignored
    ["shop.example.com", "/foo/bar/baz", "prefix-foo-bar"], // longest match wins
    ["shop.example.com", "/foobar", "root"], // Prefix matches whole path elements
    ["shop.example.com", "/impl/x", "impl"],
    ["shop.example.com", "/", "root"],
    ["other.example.com", "/anything", "wild"], // wildcard: one label
    ["a.b.example.com", "/api/v1", "any-host"], // wildcard matches one label only
    ["example.com", "/api", "any-host"],
    ["example.com", "/apix", "ns/dflt:80"], // no rule: the default backend
    ["tie.example.com", "/x/y", "older"], // same path: the older Ingress
  ];
  it.each(cases)("%s%s goes to %s", (host, path, want) => {
    const m = t.match(host, path);
    expect(m?.backend).toBe(want?.includes(":") ? want : `ns/${want}:80`);
  });
});

describe("class membership", () => {
  const cls = (isDefault: boolean): IngressClass => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "IngressClass",
    metadata: {
      name: "setpoint",
      annotations: isDefault ? { "ingressclass.kubernetes.io/is-default-class": "true" } : {},
    },
    spec: { controller: "setpoint.dev/gateway" },
  });
  const ings = [
    ingress("mine", [{ paths: [["/mine", "Prefix", "s"]] }]),
    ingress("other", [{ paths: [["/other", "Prefix", "s"]] }], { className: "nginx" }),
    ingress("none", [{ paths: [["/none", "Prefix", "s"]] }], { className: null }),
  ];
  it("serves its class, and Ingresses without a class only when it is the default", () => {
    const paths = (isDefault: boolean) =>
      buildTable(inputs(ings, ["s"], { classes: [cls(isDefault)] })).table.routes.map(
        (r) => r.path,
      );
    expect(paths(false)).toEqual(["/mine"]);
    expect(paths(true).sort()).toEqual(["/mine", "/none"]);
  });
});

describe("building from incomplete objects", () => {
  it("resolves ready, non-terminating endpoints to the slice's port of the Service port's name", () => {
    const t = buildTable(
      inputs([ingress("a", [{ paths: [["/", "Prefix", "web"]] }])], ["web"], {
        slices: [
          slice("web", [
            { ip: "10.0.0.2" },
            { ip: "10.0.0.1" },
            { ip: "10.0.0.3", ready: false },
            { ip: "10.0.0.4", terminating: true },
          ]),
        ],
      }),
    ).table;
    expect(t.backends["ns/web:80"]).toEqual([
      { ip: "10.0.0.1", port: 8080 },
      { ip: "10.0.0.2", port: 8080 },
    ]);
  });

  it("keeps the previous endpoints and certificate when the Service, slices or Secret are missing", () => {
    const tlsSecret: KubeObject = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "cert", namespace: "ns" },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": Buffer.from("CERT").toString("base64"),
        "tls.key": Buffer.from("KEY").toString("base64"),
      },
    } as KubeObject;
    const ing = ingress("a", [{ host: "a.example.com", paths: [["/", "Prefix", "web"]] }], {
      tls: [{ hosts: ["a.example.com"], secretName: "cert" }],
    });
    const first = buildTable(inputs([ing], ["web"], { secrets: [tlsSecret] })).table;
    expect(first.backends["ns/web:80"]).toHaveLength(1);
    expect(first.tls[0]).toMatchObject({ cert: "CERT", key: "KEY", hosts: ["a.example.com"] });

    const missing = buildTable(inputs([ing], [], { slices: [], secrets: [] }), first);
    expect(missing.table.backends["ns/web:80"]).toEqual(first.backends["ns/web:80"]);
    expect(missing.table.tls[0]?.cert).toBe("CERT");
    expect(missing.warnings.length).toBe(2);

    // A present Service whose slices hold no ready endpoint does empty the backend.
    const drained = buildTable(
      inputs([ing], ["web"], { slices: [slice("web", [{ ip: "10.0.0.1", ready: false }])] }),
      first,
    );
    expect(drained.table.backends["ns/web:80"]).toEqual([]);
  });
});
