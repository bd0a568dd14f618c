import type { KubeObject } from "@setpoint/api";
import { afterAll, describe, expect, it } from "vitest";
import {
  age,
  humanDuration,
  negotiateTable,
  negotiateTableVersion,
  tableColumns,
  toTable,
} from "../../src/apiserver/wire/index.ts";
import {
  configMapDefinition,
  coreEventDefinition,
  eventsV1EventDefinition,
  leaseDefinition,
  namespaceDefinition,
  secretDefinition,
  serviceAccountDefinition,
} from "../../src/registry/builtin/index.ts";
import { createBuiltinRegistry, type ResourceDefinition } from "../../src/registry/index.ts";
import { startTypeServer, type TypeServer } from "./type-server.ts";

// biome-ignore lint/suspicious/noExplicitAny: Tables are plain JSON under test
type Json = any;

const NOW = new Date("2024-05-01T12:00:00Z");
const ago = (seconds: number) =>
  new Date(NOW.getTime() - seconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");

function table(
  def: ResourceDefinition,
  objects: KubeObject[],
  extra: Partial<Parameters<typeof toTable>[3]> = {},
): Json {
  return toTable(def, def.versions[0], objects, { includeObject: "Metadata", now: NOW, ...extra });
}

const KUBECTL_ACCEPT =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

describe("negotiateTable", () => {
  it("recognizes kubectl's Accept and its fallbacks", () => {
    expect(negotiateTable(KUBECTL_ACCEPT)).toBe(true);
    expect(negotiateTableVersion(KUBECTL_ACCEPT)).toBe("v1");
    expect(
      negotiateTableVersion("application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json"),
    ).toBe("v1beta1");
    expect(negotiateTableVersion("application/json;g=meta.k8s.io;v=v1;as=Table")).toBe("v1");
    expect(
      negotiateTableVersion("application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json"),
    ).toBeUndefined();
    expect(negotiateTable("application/json,application/json;as=Table;v=v1;g=meta.k8s.io")).toBe(
      false,
    );
    expect(
      negotiateTable(
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
      ),
    ).toBe(true);
    expect(negotiateTable("application/json;as=Table;v=v2;g=meta.k8s.io")).toBe(false);
    expect(negotiateTable("application/yaml;as=Table;v=v1;g=meta.k8s.io")).toBe(false);
    expect(negotiateTable(undefined)).toBe(false);
    expect(negotiateTable("*/*")).toBe(false);
  });
});

describe("ages", () => {
  it("prints durations like kubectl", () => {
    const cases: [number, string][] = [
      [0, "0s"],
      [5, "5s"],
      [119, "119s"],
      [120, "2m"],
      [182, "3m2s"],
      [599, "9m59s"],
      [600, "10m"],
      [179 * 60 + 59, "179m"],
      [3 * 3600, "3h"],
      [4 * 3600, "4h"],
      [7 * 3600 + 59 * 60, "7h59m"],
      [8 * 3600 + 59 * 60, "8h"],
      [47 * 3600, "47h"],
      [48 * 3600, "2d"],
      [51 * 3600, "2d3h"],
      [8 * 86400, "8d"],
      [729 * 86400, "729d"],
      [730 * 86400, "2y"],
      [731 * 86400, "2y1d"],
      [8 * 365 * 86400, "8y"],
    ];
    for (const [s, want] of cases) expect(humanDuration(s * 1000), `${s}s`).toBe(want);
    expect(humanDuration(-1500)).toBe("0s");
    expect(humanDuration(-2500)).toBe("<invalid>");
    expect(age(undefined, NOW)).toBe("<unknown>");
    expect(age("not a time", NOW)).toBe("<invalid>");
    expect(age(ago(90), NOW)).toBe("90s");
  });
});

describe("toTable", () => {
  const cm = (
    name: string,
    data: Record<string, string>,
    binary?: Record<string, string>,
  ): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name,
      namespace: "default",
      resourceVersion: "7",
      creationTimestamp: ago(182),
      labels: { app: name },
    },
    data,
    ...(binary ? { binaryData: binary } : {}),
  });

  it("ConfigMap: Name, Data, Age, and PartialObjectMetadata rows", () => {
    const t = table(
      configMapDefinition,
      [cm("a", { x: "1", y: "2" }, { z: "AA==" }), cm("b", {})],
      {
        listMeta: { resourceVersion: "9", continue: "tok", remainingItemCount: 3 },
      },
    );
    expect(t.kind).toBe("Table");
    expect(t.apiVersion).toBe("meta.k8s.io/v1");
    expect(t.metadata).toEqual({ resourceVersion: "9", continue: "tok", remainingItemCount: 3 });
    expect(t.columnDefinitions.map((c: Json) => [c.name, c.type, c.format, c.priority])).toEqual([
      ["Name", "string", "name", 0],
      ["Data", "integer", "", 0],
      ["Age", "string", "", 0],
    ]);
    for (const c of t.columnDefinitions) expect(c.description).not.toBe("");
    expect(t.rows.map((r: Json) => r.cells)).toEqual([
      ["a", 3, "3m2s"],
      ["b", 0, "3m2s"],
    ]);
    expect(t.rows[0].object).toEqual({
      kind: "PartialObjectMetadata",
      apiVersion: "meta.k8s.io/v1",
      metadata: cm("a", {}).metadata,
    });
  });

  it("includeObject Object and None; v1beta1; single objects carry their resourceVersion", () => {
    const obj = cm("a", { x: "1" });
    const full = table(configMapDefinition, [obj], { includeObject: "Object" });
    expect(full.rows[0].object).toEqual(obj);
    expect(full.metadata).toEqual({ resourceVersion: "7" });
    const none = table(configMapDefinition, [obj], {
      includeObject: "None",
      tableVersion: "v1beta1",
    });
    expect(none.rows[0].object).toBeUndefined();
    expect(none.apiVersion).toBe("meta.k8s.io/v1beta1");
    const watch = table(configMapDefinition, [obj], { noHeaders: true });
    expect(watch.columnDefinitions).toBeNull();
    expect(watch.rows[0].cells).toEqual(["a", 1, "3m2s"]);
  });

  it("built-in types print the columns kubectl shows", () => {
    const meta = { name: "x", namespace: "default", creationTimestamp: ago(30) };
    const names = (def: ResourceDefinition) =>
      tableColumns(def, def.versions[0]).map((c) => c.name);
    expect(names(secretDefinition)).toEqual(["Name", "Type", "Data", "Age"]);
    expect(
      table(secretDefinition, [{ metadata: meta, type: "Opaque", data: { a: "", b: "" } }]).rows[0]
        .cells,
    ).toEqual(["x", "Opaque", 2, "30s"]);
    expect(names(namespaceDefinition)).toEqual(["Name", "Status", "Age"]);
    expect(
      table(namespaceDefinition, [{ metadata: meta, status: { phase: "Active" } }]).rows[0].cells,
    ).toEqual(["x", "Active", "30s"]);
    expect(names(leaseDefinition)).toEqual(["Name", "Holder", "Age"]);
    expect(
      table(leaseDefinition, [{ metadata: meta, spec: { holderIdentity: "me" } }]).rows[0].cells,
    ).toEqual(["x", "me", "30s"]);
    expect(table(leaseDefinition, [{ metadata: meta, spec: {} }]).rows[0].cells).toEqual([
      "x",
      "",
      "30s",
    ]);
    expect(names(serviceAccountDefinition)).toEqual(["Name", "Secrets", "Age"]);
    expect(
      table(serviceAccountDefinition, [{ metadata: meta, secrets: [{ name: "s" }] }]).rows[0].cells,
    ).toEqual(["x", 1, "30s"]);
  });

  it("Events: LAST SEEN TYPE REASON OBJECT MESSAGE, the rest with -o wide, no Age", () => {
    const cols = tableColumns(coreEventDefinition, coreEventDefinition.versions[0]);
    expect(cols.map((c) => `${c.name}:${c.priority}`)).toEqual([
      "Last Seen:0",
      "Type:0",
      "Reason:0",
      "Object:0",
      "Subobject:1",
      "Source:1",
      "Message:0",
      "First Seen:1",
      "Count:1",
      "Name:1",
    ]);
    const ev: KubeObject = {
      metadata: { name: "pod.123", namespace: "default", creationTimestamp: ago(400) },
      involvedObject: { kind: "Pod", name: "web-1", fieldPath: "spec.containers{web}" },
      reason: "Started",
      message: "  Started container web \n",
      type: "Normal",
      source: { component: "kubelet", host: "node-1" },
      firstTimestamp: ago(600),
      lastTimestamp: ago(65),
      count: 3,
    };
    expect(table(coreEventDefinition, [ev]).rows[0].cells).toEqual([
      "65s",
      "Normal",
      "Started",
      "pod/web-1",
      "spec.containers{web}",
      "kubelet, node-1",
      "Started container web",
      "10m",
      3,
      "pod.123",
    ]);
    const fresh: KubeObject = {
      metadata: { name: "e2", namespace: "default" },
      involvedObject: { kind: "Node" },
      eventTime: ago(5).replace("Z", ".000000Z"),
      reportingComponent: "ctl",
    };
    const cells = table(coreEventDefinition, [fresh]).rows[0].cells;
    expect(cells.slice(0, 4)).toEqual(["5s", "", "", "node"]);
    expect(cells[5]).toBe("ctl");
    expect(cells[8]).toBe(1);
    const v1: KubeObject = {
      metadata: { name: "e3", namespace: "default" },
      regarding: { kind: "Deployment", name: "web" },
      note: "scaled",
      reason: "Scaled",
      type: "Normal",
      eventTime: ago(20),
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-0",
      series: { count: 4, lastObservedTime: ago(2) },
    };
    expect(table(eventsV1EventDefinition, [v1]).rows[0].cells).toEqual([
      "2s",
      "Normal",
      "Scaled",
      "deployment/web",
      "",
      "example.com/ctl, ctl-0",
      "scaled",
      "20s",
      4,
      "e3",
    ]);
    const noTimes = table(coreEventDefinition, [{ metadata: { name: "e" } }]).rows[0].cells;
    expect(noTimes[0]).toBe("<unknown>");
  });

  it("custom resources: JSONPath columns typed like Kubernetes", () => {
    const def: ResourceDefinition = {
      ...configMapDefinition,
      group: "example.com",
      custom: true,
      typed: false,
      versions: [
        {
          ...configMapDefinition.versions[0],
          printerColumns: [
            { name: "Replicas", type: "integer", jsonPath: ".spec.replicas", priority: 0 },
            { name: "Ready", type: "boolean", jsonPath: ".status.ready", priority: 0 },
            { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
            { name: "Ports", type: "string", jsonPath: ".spec.ports[*].port", priority: 1 },
            { name: "Started", type: "date", jsonPath: ".status.startedAt", priority: 0 },
            { name: "Missing", type: "string", jsonPath: ".status.nothing", priority: 0 },
          ],
        },
      ],
    };
    const obj: KubeObject = {
      metadata: { name: "w", creationTimestamp: ago(10) },
      spec: { replicas: 3, image: "nginx:1", ports: [{ port: 80 }, { port: 443 }] },
      status: { ready: true, startedAt: ago(3700) },
    };
    const t = table(def, [obj]);
    expect(t.columnDefinitions.map((c: Json) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Replicas:0",
      "Ready:0",
      "Image:1",
      "Ports:1",
      "Started:0",
      "Missing:0",
      "Age:0",
    ]);
    expect(t.rows[0].cells).toEqual(["w", 3, true, "nginx:1", "80", "61m", null, "10s"]);
  });
});

describe("kubectl prints Tables", () => {
  const servers: TypeServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it("kubectl get: default columns, -o wide, -A and --show-labels", async () => {
    const reg = createBuiltinRegistry();
    // Ages in whole minutes, half a minute from a boundary: kubectl's rendering of them
    // holds however long the commands take to start on a loaded machine.
    const now = Date.now();
    const at = (s: number) => new Date(now - s * 1000).toISOString().replace(/\.\d+Z$/, "Z");
    const lists = new Map<string, KubeObject[]>([
      [
        "/configmaps",
        [
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: {
              name: "one",
              namespace: "default",
              creationTimestamp: at(1830),
              labels: { app: "web" },
            },
            data: { a: "1" },
          },
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "two", namespace: "other", creationTimestamp: at(7200) },
            data: { a: "1", b: "2" },
          },
        ],
      ],
      [
        "/events",
        [
          {
            apiVersion: "v1",
            kind: "Event",
            metadata: { name: "ev1", namespace: "default", creationTimestamp: at(1530) },
            involvedObject: { kind: "Pod", name: "web-1", namespace: "default" },
            reason: "Pulled",
            message: "pulled image",
            type: "Normal",
            source: { component: "kubelet" },
            firstTimestamp: at(1530),
            lastTimestamp: at(1530),
            count: 2,
          },
        ],
      ],
    ]);
    const s = await startTypeServer(reg, { minor: 32, lists });
    servers.push(s);
    const get = await s.kubectl(["get", "configmaps"]);
    expect(get.stderr).toBe("");
    expect(get.stdout.split("\n")[0].split(/\s+/)).toEqual(["NAME", "DATA", "AGE"]);
    expect(get.stdout.split("\n")[1].split(/\s+/)).toEqual(["one", "1", "30m"]);
    const all = await s.kubectl(["get", "cm", "-A", "--show-labels"]);
    const lines = all.stdout
      .trim()
      .split("\n")
      .map((l) => l.split(/\s+/));
    expect(lines[0]).toEqual(["NAMESPACE", "NAME", "DATA", "AGE", "LABELS"]);
    expect(lines[1]).toEqual(["default", "one", "1", "30m", "app=web"]);
    expect(lines[2]).toEqual(["other", "two", "2", "120m", "<none>"]);
    const ev = await s.kubectl(["get", "events"]);
    expect(ev.stdout.split("\n")[0].split(/\s{2,}/)).toEqual([
      "LAST SEEN",
      "TYPE",
      "REASON",
      "OBJECT",
      "MESSAGE",
    ]);
    expect(ev.stdout.split("\n")[1].split(/\s{2,}/)).toEqual([
      "25m",
      "Normal",
      "Pulled",
      "pod/web-1",
      "pulled image",
    ]);
    const wide = await s.kubectl(["get", "ev", "-o", "wide"]);
    expect(wide.stdout.split("\n")[0].split(/\s{2,}/)).toEqual([
      "LAST SEEN",
      "TYPE",
      "REASON",
      "OBJECT",
      "SUBOBJECT",
      "SOURCE",
      "MESSAGE",
      "FIRST SEEN",
      "COUNT",
      "NAME",
    ]);
    const tableReads = s.reads.filter((r) => r.contentType.includes("as=Table"));
    expect(tableReads.length).toBe(4);
  });
});
