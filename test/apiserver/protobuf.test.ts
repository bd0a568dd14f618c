import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type KubeObject, type Schema, StatusError } from "@setpoint/api";
import fc from "fast-check";
import protobuf from "protobufjs";
import { afterAll, describe, expect, it } from "vitest";
import { deleteOptionsSchema } from "../../src/apiserver/discovery/index.ts";
import {
  decodeProtobufObject,
  decodeProtobufResponse,
  encodeProtobufObject,
  isProtobufContentType,
  PROTOBUF_MAGIC,
  protobufListEncoder,
} from "../../src/apiserver/wire/index.ts";
import { fieldInfo, protobufRoot } from "../../src/apiserver/wire/protobuf/messages.ts";
import { builtinDefinitions } from "../../src/registry/builtin/index.ts";
import { createBuiltinRegistry } from "../../src/registry/index.ts";
import { startTypeServer, type TypeServer } from "./type-server.ts";

/**
 * Hand-encoding with Kubernetes' field numbers (from k8s.io/api and apimachinery
 * generated.proto), independent of the decoder's .proto files.
 */
type F =
  | [number, "string", string]
  | [number, "bytes", Uint8Array]
  | [number, "msg", F[]]
  | [number, "varint", number]
  | [number, "map", [string, string | Uint8Array]];

function encode(fields: F[]): Uint8Array {
  const w = protobuf.Writer.create();
  for (const f of fields) {
    const [n, kind, value] = f;
    if (kind === "varint") w.uint32(n << 3).int64(value as number);
    else if (kind === "string") w.uint32((n << 3) | 2).string(value as string);
    else if (kind === "bytes") w.uint32((n << 3) | 2).bytes(value as Uint8Array);
    else if (kind === "msg") w.uint32((n << 3) | 2).bytes(encode(value as F[]));
    else {
      const [k, v] = value as [string, string | Uint8Array];
      const entry: F[] = [
        [1, "string", k],
        typeof v === "string" ? [2, "string", v] : [2, "bytes", v],
      ];
      w.uint32((n << 3) | 2).bytes(encode(entry));
    }
  }
  return w.finish();
}

function body(apiVersion: string, kind: string, raw: F[]): Buffer {
  const unknown = encode([
    [
      1,
      "msg",
      [
        [1, "string", apiVersion],
        [2, "string", kind],
      ],
    ],
    [2, "bytes", encode(raw)],
    [3, "string", ""],
    [4, "string", ""],
  ]);
  return Buffer.concat([PROTOBUF_MAGIC, unknown]);
}

const T = (seconds: number, nanos = 0): F[] => [
  [1, "varint", seconds],
  [2, "varint", nanos],
];

describe("decodeProtobufObject", () => {
  it("decodes ObjectMeta completely, as Kubernetes' JSON", () => {
    const meta: F[] = [
      [1, "string", "cm1"],
      [2, "string", "gen-"],
      [3, "string", "default"],
      [5, "string", "1b4e28ba-2fa1-11d2-883f-0016d3cca427"],
      [6, "string", "42"],
      [7, "varint", 3],
      [8, "msg", T(1700000000)],
      [9, "msg", T(1700000100)],
      [10, "varint", 0],
      [11, "map", ["app", "web"]],
      [11, "map", ["tier", ""]],
      [12, "map", ["note", "x"]],
      [
        13,
        "msg",
        [
          [1, "string", "Deployment"],
          [3, "string", "web"],
          [4, "string", "u-1"],
          [5, "string", "apps/v1"],
          [6, "varint", 1],
          [7, "varint", 0],
        ],
      ],
      [
        13,
        "msg",
        [
          [3, "string", "bare"],
          [4, "string", "u-2"],
        ],
      ],
      [14, "string", "a.io/x"],
      [14, "string", "b.io/y"],
      [
        17,
        "msg",
        [
          [1, "string", "kubectl"],
          [2, "string", "Apply"],
          [3, "string", "v1"],
          [4, "msg", T(1700000000)],
          [6, "string", "FieldsV1"],
          [7, "msg", [[1, "bytes", Buffer.from('{"f:data":{"f:a":{}}}')]]],
        ],
      ],
    ];
    const obj = decodeProtobufObject(body("v1", "ConfigMap", [[1, "msg", meta]]));
    expect(obj).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "cm1",
        generateName: "gen-",
        namespace: "default",
        uid: "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        resourceVersion: "42",
        generation: 3,
        creationTimestamp: "2023-11-14T22:13:20Z",
        deletionTimestamp: "2023-11-14T22:15:00Z",
        deletionGracePeriodSeconds: 0,
        labels: { app: "web", tier: "" },
        annotations: { note: "x" },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "Deployment",
            name: "web",
            uid: "u-1",
            controller: true,
            blockOwnerDeletion: false,
          },
          { apiVersion: "", kind: "", name: "bare", uid: "u-2" },
        ],
        finalizers: ["a.io/x", "b.io/y"],
        managedFields: [
          {
            manager: "kubectl",
            operation: "Apply",
            apiVersion: "v1",
            time: "2023-11-14T22:13:20Z",
            fieldsType: "FieldsV1",
            fieldsV1: { "f:data": { "f:a": {} } },
          },
        ],
      },
    });
  });

  it("decodes ConfigMaps and Secrets: maps, bytes as base64, pointers kept when false", () => {
    const cm = decodeProtobufObject(
      body("v1", "ConfigMap", [
        [1, "msg", [[1, "string", "c"]]],
        [2, "map", ["a", "1"]],
        [2, "map", ["empty", ""]],
        [3, "map", ["bin", Uint8Array.from([0, 255, 1])]],
        [4, "varint", 0],
      ]),
    );
    expect(cm).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c" },
      data: { a: "1", empty: "" },
      binaryData: { bin: "AP8B" },
      immutable: false,
    });
    const secret = decodeProtobufObject(
      body("v1", "Secret", [
        [1, "msg", [[1, "string", "s"]]],
        [2, "map", ["token", Buffer.from("héllo")]],
        [2, "map", ["none", new Uint8Array()]],
        [3, "string", "kubernetes.io/tls"],
        [4, "map", ["plain", "text"]],
      ]),
    );
    expect(secret).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s" },
      data: { token: Buffer.from("héllo").toString("base64"), none: "" },
      type: "kubernetes.io/tls",
      stringData: { plain: "text" },
    });
  });

  it("decodes Namespaces, ServiceAccounts, Leases and both Events", () => {
    expect(
      decodeProtobufObject(
        body("v1", "Namespace", [
          [1, "msg", [[1, "string", "n"]]],
          [2, "msg", [[1, "string", "kubernetes"]]],
          [
            3,
            "msg",
            [
              [1, "string", "Active"],
              [
                2,
                "msg",
                [
                  [1, "string", "NamespaceContentRemaining"],
                  [2, "string", "False"],
                  [4, "msg", T(1)],
                ],
              ],
            ],
          ],
        ]),
      ),
    ).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "n" },
      spec: { finalizers: ["kubernetes"] },
      status: {
        phase: "Active",
        conditions: [
          {
            type: "NamespaceContentRemaining",
            status: "False",
            lastTransitionTime: "1970-01-01T00:00:01Z",
          },
        ],
      },
    });
    expect(
      decodeProtobufObject(
        body("v1", "ServiceAccount", [
          [1, "msg", [[1, "string", "sa"]]],
          [
            2,
            "msg",
            [
              [3, "string", "tok"],
              [1, "string", "Secret"],
            ],
          ],
          [3, "msg", [[1, "string", "pull"]]],
          [4, "varint", 0],
        ]),
      ),
    ).toEqual({
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "sa" },
      secrets: [{ kind: "Secret", name: "tok" }],
      imagePullSecrets: [{ name: "pull" }],
      automountServiceAccountToken: false,
    });
    expect(
      decodeProtobufObject(
        body("coordination.k8s.io/v1", "Lease", [
          [
            1,
            "msg",
            [
              [1, "string", "l"],
              [3, "string", "kube-node-lease"],
            ],
          ],
          [
            2,
            "msg",
            [
              [1, "string", ""],
              [2, "varint", 0],
              [3, "msg", T(1700000000, 123456789)],
              [4, "msg", T(1700000001, 5000)],
              [5, "varint", 2],
            ],
          ],
        ]),
      ),
    ).toEqual({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: "l", namespace: "kube-node-lease" },
      spec: {
        holderIdentity: "",
        leaseDurationSeconds: 0,
        acquireTime: "2023-11-14T22:13:20.123456Z",
        renewTime: "2023-11-14T22:13:21.000005Z",
        leaseTransitions: 2,
      },
    });
    expect(
      decodeProtobufObject(
        body("v1", "Event", [
          [
            1,
            "msg",
            [
              [1, "string", "e"],
              [3, "string", "default"],
            ],
          ],
          [
            2,
            "msg",
            [
              [1, "string", "Pod"],
              [3, "string", "p"],
              [2, "string", "default"],
            ],
          ],
          [3, "string", "Started"],
          [4, "string", "ok"],
          [5, "msg", [[1, "string", "kubelet"]]],
          [6, "msg", T(100)],
          [8, "varint", 2],
          [9, "string", "Normal"],
        ]),
      ),
    ).toEqual({
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "e", namespace: "default" },
      involvedObject: { kind: "Pod", name: "p", namespace: "default" },
      reason: "Started",
      message: "ok",
      source: { component: "kubelet" },
      firstTimestamp: "1970-01-01T00:01:40Z",
      count: 2,
      type: "Normal",
      reportingComponent: "",
      reportingInstance: "",
    });
    expect(
      decodeProtobufObject(
        body("events.k8s.io/v1", "Event", [
          [1, "msg", [[1, "string", "e"]]],
          [2, "msg", T(10, 1000)],
          [
            3,
            "msg",
            [
              [1, "varint", 0],
              [2, "msg", T(11)],
            ],
          ],
          [4, "string", "example.com/ctl"],
          [5, "string", "ctl-0"],
          [6, "string", "Sync"],
          [7, "string", "Synced"],
          [
            8,
            "msg",
            [
              [1, "string", "Widget"],
              [3, "string", "w"],
            ],
          ],
          [10, "string", "done"],
          [11, "string", "Normal"],
        ]),
      ),
    ).toEqual({
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "e" },
      eventTime: "1970-01-01T00:00:10.000001Z",
      series: { count: 0, lastObservedTime: "1970-01-01T00:00:11.000000Z" },
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-0",
      action: "Sync",
      reason: "Synced",
      regarding: { kind: "Widget", name: "w" },
      note: "done",
      type: "Normal",
    });
  });

  it("decodes DeleteOptions under any group-version", () => {
    expect(
      decodeProtobufObject(
        body("coordination.k8s.io/v1", "DeleteOptions", [
          [1, "varint", 0],
          [
            2,
            "msg",
            [
              [1, "string", "u-1"],
              [2, "string", ""],
            ],
          ],
          [4, "string", "Foreground"],
          [5, "string", "All"],
        ]),
      ),
    ).toEqual({
      apiVersion: "coordination.k8s.io/v1",
      kind: "DeleteOptions",
      metadata: {},
      gracePeriodSeconds: 0,
      preconditions: { uid: "u-1", resourceVersion: "" },
      propagationPolicy: "Foreground",
      dryRun: ["All"],
    });
  });

  it("ignores fields it does not know, as Kubernetes does", () => {
    const obj = decodeProtobufObject(
      body("v1", "ConfigMap", [
        [
          1,
          "msg",
          [
            [1, "string", "c"],
            [99, "string", "future"],
          ],
        ],
        [77, "varint", 5],
      ]),
    );
    expect(obj).toEqual({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } });
  });

  it("refuses malformed input with 400 and a clear message", () => {
    const cases: [Buffer, RegExp][] = [
      [Buffer.from(""), /prefix/],
      [Buffer.from("k8s"), /prefix/],
      [Buffer.from('{"kind":"ConfigMap"}'), /prefix/],
      [
        Buffer.concat([PROTOBUF_MAGIC, Buffer.from([0x0a, 0x10, 0x0a])]),
        /index out of range|decode/,
      ],
      [
        body("example.com/v1", "Widget", []),
        /no protobuf encoding is known for kind "Widget" in version "example.com\/v1"/,
      ],
      [body("", "", []), /apiVersion and kind/],
      [body("v1", "ConfigMap", [[1, "msg", [[8, "msg", T(999999999999)]]]]), /time out of range/],
      [body("v1", "ConfigMap", [[1, "msg", [[7, "varint", 2 ** 60]]]]), /integer out of range/],
      [
        body("v1", "ConfigMap", [
          [1, "msg", [[17, "msg", [[7, "msg", [[1, "bytes", Buffer.from("{nope")]]]]]]],
        ]),
        /FieldsV1/,
      ],
      [
        Buffer.concat([
          PROTOBUF_MAGIC,
          encode([
            [
              1,
              "msg",
              [
                [1, "string", "v1"],
                [2, "string", "ConfigMap"],
              ],
            ],
            [3, "string", "gzip"],
          ]),
        ]),
        /content encoding "gzip"/,
      ],
    ];
    for (const [input, message] of cases) {
      let caught: unknown;
      try {
        decodeProtobufObject(input);
      } catch (err) {
        caught = err;
      }
      expect(caught, String(message)).toBeInstanceOf(StatusError);
      expect((caught as StatusError).code).toBe(400);
      expect((caught as StatusError).message).toMatch(message);
    }
  });

  it("never throws anything but a 400 StatusError on random or mutated bytes", () => {
    const valid = body("v1", "Secret", [
      [
        1,
        "msg",
        [
          [1, "string", "s"],
          [11, "map", ["a", "b"]],
          [8, "msg", T(5)],
        ],
      ],
      [2, "map", ["k", Buffer.from("v")]],
      [3, "string", "Opaque"],
    ]);
    const check = (input: Buffer) => {
      try {
        const obj = decodeProtobufObject(input);
        expect(typeof obj.metadata).toBe("object");
        expect(typeof obj.kind).toBe("string");
      } catch (err) {
        expect(err).toBeInstanceOf(StatusError);
        expect((err as StatusError).code).toBe(400);
      }
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) =>
        check(Buffer.concat([PROTOBUF_MAGIC, bytes])),
      ),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.nat(valid.length),
        (flips, cut) => {
          const mutated = Buffer.from(valid);
          for (const [i, b] of flips) mutated[i] = b;
          check(mutated);
          check(mutated.subarray(0, Math.max(cut, 4)));
        },
      ),
      { numRuns: 3000 },
    );
    // Deeply nested groups in an unknown field.
    check(Buffer.concat([valid, Buffer.alloc(200_000, 0x0b)]));
  });

  it("recognizes the protobuf content type", () => {
    expect(isProtobufContentType("application/vnd.kubernetes.protobuf")).toBe(true);
    expect(isProtobufContentType("Application/Vnd.Kubernetes.Protobuf; charset=x")).toBe(true);
    expect(isProtobufContentType("application/json")).toBe(false);
    expect(isProtobufContentType("application/vnd.kubernetes.protobuf;stream=watch")).toBe(true);
    expect(isProtobufContentType(undefined)).toBe(false);
  });
});

describe("protobuf lists written in parts", () => {
  it("are the bytes of the whole list: head, items, tail, with the items measured first", () => {
    const cases: [string, string, (i: number) => Record<string, unknown>][] = [
      ["v1", "ConfigMapList", (i) => ({ data: { k: "v".repeat(i * 37) } })],
      ["apps/v1", "DeploymentList", (i) => ({ spec: { replicas: i, selector: {} } })],
      ["meta.k8s.io/v1", "PartialObjectMetadataList", () => ({})],
    ];
    for (const [apiVersion, kind, body] of cases) {
      const encoder = protobufListEncoder(apiVersion, kind)!;
      const items = Array.from({ length: 40 }, (_, i) => ({
        apiVersion,
        kind: kind.slice(0, -4),
        metadata: { name: `o-${i}`, namespace: "ns", resourceVersion: String(10 + i) },
        ...body(i),
      }));
      for (const n of [0, 1, 40]) {
        const metadata =
          n === 40
            ? { resourceVersion: "99", continue: "t", remainingItemCount: 5 }
            : { resourceVersion: "99" };
        const list = { apiVersion, kind, metadata, items: items.slice(0, n) };
        let bytes = 0;
        for (const item of list.items) bytes += encoder.itemSize(item);
        const parts = Buffer.concat([
          encoder.head(list, bytes),
          encoder.items(list.items.slice(0, 7)),
          ...list.items.slice(7).map((item) => encoder.item(item)),
          encoder.tail,
        ]);
        const whole = encodeProtobufObject(list)!;
        expect(parts.equals(whole), `${kind} of ${n}`).toBe(true);
        expect((decodeProtobufResponse(parts).items as unknown[] | undefined) ?? []).toHaveLength(
          n,
        );
      }
    }
    expect(protobufListEncoder("example.com/v1", "WidgetList")).toBeUndefined();
  });
});

describe("protobuf messages agree with the schemas", () => {
  it("every built-in kind's message has exactly the fields of its schema", () => {
    const root = protobufRoot();
    /** Messages whose JSON is a value, not an object of their fields. */
    const VALUES = /\.(Time|MicroTime|FieldsV1|Quantity|IntOrString|RawExtension|ExtraValue)$/;
    /** The JSON names of a message's fields: an embedded struct's are its parent's. */
    const jsonNames = (type: protobuf.Type): string[] =>
      type.fieldsArray.flatMap((f) =>
        fieldInfo(f).inline ? jsonNames(f.resolvedType as protobuf.Type) : [f.name],
      );
    const jsonFields = (type: protobuf.Type): protobuf.Field[] =>
      type.fieldsArray.flatMap((f) =>
        fieldInfo(f).inline ? jsonFields(f.resolvedType as protobuf.Type) : [f],
      );
    const seen = new Set<string>();
    const compare = (type: protobuf.Type, schema: Schema, path: string, top = false) => {
      if (VALUES.test(type.fullName) || seen.has(type.fullName)) return;
      seen.add(type.fullName);
      // Top-level apiVersion and kind travel in the envelope, not in the message;
      // an embedded kind's (a StatefulSet's volumeClaimTemplates) travel nowhere.
      const typeMeta = top || (!!schema.properties?.metadata && !jsonNames(type).includes("kind"));
      const own = Object.keys(schema.properties ?? {}).filter(
        (k) => !(typeMeta && (k === "apiVersion" || k === "kind")),
      );
      expect(jsonNames(type).sort(), path).toEqual(own.sort());
      for (const f of jsonFields(type)) {
        const prop = schema.properties?.[f.name] as Schema;
        if (f.resolvedType instanceof protobuf.Type) {
          const inner = f.map
            ? (prop.additionalProperties as Schema)
            : f.repeated
              ? (prop.items as Schema)
              : prop;
          compare(f.resolvedType, inner, `${path}.${f.name}`);
        }
      }
    };
    let compared = 0;
    for (const def of builtinDefinitions()) {
      expect(def.protobufMessage, def.names.kind).toBeDefined();
      seen.clear();
      compare(root.lookupType(def.protobufMessage!), def.versions[0].schema, def.names.kind, true);
      compared++;
    }
    expect(compared).toBe(builtinDefinitions().length);
    seen.clear();
    compare(
      root.lookupType("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
      deleteOptionsSchema,
      "DeleteOptions",
      true,
    );
  });
});

describe("kubectl 1.32 sends protobuf for create", () => {
  const servers: TypeServer[] = [];
  const dir = mkdtempSync(join(tmpdir(), "setpoint-protobuf-"));
  afterAll(async () => {
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("create configmap, secret and namespace bodies decode to the objects asked for", async () => {
    const decoded: KubeObject[] = [];
    const s = await startTypeServer(createBuiltinRegistry(), {
      minor: 32,
      onWrite: (r) => {
        const obj = isProtobufContentType(r.contentType)
          ? decodeProtobufObject(r.body)
          : JSON.parse(r.body.toString());
        decoded.push(obj);
        return obj;
      },
    });
    servers.push(s);
    const bin = join(dir, "blob.bin");
    writeFileSync(bin, Buffer.from([0, 1, 2, 250, 255]));
    const runs = [
      [
        "create",
        "configmap",
        "app-config",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
        `--from-file=${bin}`,
      ],
      [
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=user=admin",
        "--from-literal=pass=s3cr3t",
        "--type=example.com/basic",
      ],
      [
        "create",
        "secret",
        "docker-registry",
        "reg",
        "--docker-server=r.example.com",
        "--docker-username=u",
        "--docker-password=p",
      ],
      ["create", "namespace", "team-a"],
    ];
    for (const args of runs) {
      const r = await s.kubectl(args);
      expect(r.stderr, args.join(" ")).toBe("");
      expect(r.code).toBe(0);
    }
    expect(s.requests.map((r) => r.contentType)).toEqual(
      Array(4).fill("application/vnd.kubernetes.protobuf"),
    );
    expect(decoded[0]).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "app-config" },
      data: { mode: "fast", level: "3" },
      binaryData: { "blob.bin": Buffer.from([0, 1, 2, 250, 255]).toString("base64") },
    });
    expect(decoded[1]).toEqual({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "creds" },
      data: {
        user: Buffer.from("admin").toString("base64"),
        pass: Buffer.from("s3cr3t").toString("base64"),
      },
      type: "example.com/basic",
    });
    expect(decoded[2]).toMatchObject({ kind: "Secret", type: "kubernetes.io/dockerconfigjson" });
    const docker = (decoded[2].data as Record<string, string>)[".dockerconfigjson"];
    expect(
      JSON.parse(Buffer.from(docker, "base64").toString()).auths["r.example.com"].username,
    ).toBe("u");
    expect(decoded[3]).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "team-a" },
    });
  });
});
