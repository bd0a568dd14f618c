/**
 * The project's dependency shape, checked on the import graph of its sources (every
 * file under src/ and packages/*\/src, every static, re-export and dynamic import
 * with a literal specifier, type-only imports included):
 *
 * 1. No file-level cycle: no source file imports itself through any chain of imports.
 * 2. Layer order: each area (a package, or a top-level folder of src/) imports only
 *    the areas below it in LAYERS. packages/api is the lowest; storage and registry
 *    build on it; the apiserver on those three; the runtime package on api only; the
 *    built-in controllers on the runtime and api; controlplane (the composition
 *    root) composes those; cli and testenv compose everything, and nothing in src/
 *    or packages/ imports them (only bin/ and the tests do).
 * 3. Packages never import src/.
 * 4. Every area is in LAYERS: a new top-level folder has to say where it sits.
 * 5. Inside src/apiserver, each folder imports only the folders below it in
 *    APISERVER_FOLDERS, and every folder is listed there.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cyclesOf, type ImportEdge, readImportGraph } from "./import-graph.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Each area and the areas it may import (besides itself). */
const LAYERS: Record<string, readonly string[]> = {
  "packages/api": [],
  "src/storage": ["packages/api"],
  "src/registry": ["packages/api"],
  "src/apiserver": ["packages/api", "src/storage", "src/registry"],
  "packages/runtime": ["packages/api"],
  "src/controllers": ["packages/api", "packages/runtime"],
  // The data plane's shared parts (atomic files, endpoints from slices, picking).
  "src/dataplane": ["packages/api"],
  // The data plane: the service proxy the agent runs, an ordinary API client.
  "src/proxy": ["packages/api", "packages/runtime", "src/dataplane"],
  // The data plane: the node agent, an ordinary client like the controllers.
  "src/agent": ["packages/api", "packages/runtime", "src/dataplane", "src/proxy"],
  // The data plane: an ordinary API client, like the controllers.
  "src/gateway": ["packages/api", "packages/runtime", "src/dataplane"],
  // The composition root: starts a whole control plane; cli and testenv build on it.
  "src/controlplane": [
    "packages/api",
    "packages/runtime",
    "src/storage",
    "src/registry",
    "src/apiserver",
    "src/controllers",
  ],
  "src/testenv": [
    "packages/api",
    "packages/runtime",
    "src/storage",
    "src/registry",
    "src/apiserver",
    "src/controllers",
    "src/controlplane",
  ],
  "src/cli": [
    "packages/api",
    "packages/runtime",
    "src/gateway",
    "src/storage",
    "src/registry",
    "src/apiserver",
    "src/controllers",
    "src/controlplane",
    "src/agent",
    "src/proxy",
    "src/dataplane",
  ],
};

/**
 * The folders of src/apiserver and the folders each may import: the audit log's
 * recording (which the wire and the endpoints report to) at the bottom, tokens and wire, then the watch caches, the resource store, discovery and the CRD loop,
 * the HTTP endpoints, metrics, and the server process on top.
 */
const APISERVER_FOLDERS: Record<string, readonly string[]> = {
  audit: [],
  tokens: [],
  wire: ["audit"],
  streaming: [],
  watchcache: ["wire"],
  authz: ["watchcache"],
  store: ["wire", "watchcache"],
  admission: ["wire", "watchcache", "store"],
  discovery: ["wire"],
  crd: ["wire", "watchcache", "store"],
  endpoints: [
    "tokens",
    "wire",
    "streaming",
    "watchcache",
    "store",
    "discovery",
    "authz",
    "admission",
    "audit",
  ],
  metrics: ["endpoints", "store"],
  server: ["audit", "tokens", "wire", "store", "discovery", "crd", "endpoints", "metrics"],
};

/** The folder of a file under src/apiserver/, or undefined for other files. */
function apiserverFolderOf(file: string): string | undefined {
  const parts = file.split("/");
  return parts[0] === "src" && parts[1] === "apiserver" && parts.length > 3 ? parts[2] : undefined;
}

/** The area of a source file: packages/<name> or src/<folder>. */
function areaOf(file: string): string {
  return file.split("/").slice(0, 2).join("/");
}

const graph = readImportGraph(ROOT);
const describeEdge = (e: ImportEdge): string => `${e.from} imports ${e.to} ("${e.specifier}")`;

describe("the import graph of src/ and packages/*/src", () => {
  it("is read: every source file, and imports between them", () => {
    expect(graph.files).toContain("src/apiserver/server/server.ts");
    expect(graph.files).toContain("packages/api/src/index.ts");
    expect(graph.edges.length).toBeGreaterThan(graph.files.length);
    // Workspace package names resolve through tsconfig.json's paths.
    expect(
      graph.edges.some(
        (e) => e.specifier === "@setpoint/api" && e.to === "packages/api/src/index.ts",
      ),
    ).toBe(true);
  });

  it("has no cycle between files", () => {
    const next = new Map<string, string[]>();
    for (const e of graph.edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
    const cycles = cyclesOf(graph.files, (f) => next.get(f) ?? []);
    expect(cycles, "files that import each other, directly or around a loop").toEqual([]);
  });

  it("places every file in a known layer", () => {
    const unknown = [...new Set(graph.files.map(areaOf))].filter((a) => !(a in LAYERS));
    expect(unknown, "areas missing from LAYERS in test/architecture/layers.test.ts").toEqual([]);
  });

  it("imports only downwards: no area imports one above it or beside it", () => {
    const wrong = graph.edges
      .filter((e) => {
        const from = areaOf(e.from);
        const to = areaOf(e.to);
        return from !== to && !(LAYERS[from] ?? []).includes(to);
      })
      .map(describeEdge);
    expect(wrong).toEqual([]);
  });

  it("keeps the apiserver's folders in their order, each importing only those below it", () => {
    const folders = new Set(graph.files.map(apiserverFolderOf).filter((f) => f !== undefined));
    expect([...folders].filter((f) => !(f in APISERVER_FOLDERS))).toEqual([]);
    const wrong = graph.edges
      .filter((e) => {
        const from = apiserverFolderOf(e.from);
        const to = apiserverFolderOf(e.to);
        return (
          from !== undefined &&
          to !== undefined &&
          from !== to &&
          !(APISERVER_FOLDERS[from] ?? []).includes(to)
        );
      })
      .map(describeEdge);
    expect(wrong).toEqual([]);
  });

  it("keeps packages free of src/", () => {
    const wrong = graph.edges
      .filter((e) => e.from.startsWith("packages/") && e.to.startsWith("src/"))
      .map(describeEdge);
    expect(wrong).toEqual([]);
  });
});

describe("the checks themselves", () => {
  it("find a cycle, and only the files in it", () => {
    const next: Record<string, string[]> = { a: ["b"], b: ["c"], c: ["a", "d"], d: [], e: ["e"] };
    const cycles = cyclesOf(Object.keys(next), (n) => next[n] ?? []);
    expect(cycles).toEqual([["a", "b", "c"], ["e"]]);
  });

  it("know each area's place", () => {
    expect(areaOf("packages/runtime/src/client/client.ts")).toBe("packages/runtime");
    expect(areaOf("src/apiserver/wire/decode.ts")).toBe("src/apiserver");
    // The runtime must not reach the apiserver, nor storage reach the registry.
    expect(LAYERS["packages/runtime"]).not.toContain("src/apiserver");
    expect(LAYERS["src/storage"]).not.toContain("src/registry");
    // Nothing but the bin and the tests imports cli or testenv.
    for (const [area, allowed] of Object.entries(LAYERS)) {
      if (area !== "src/cli") expect(allowed).not.toContain("src/cli");
      expect(allowed).not.toContain("src/testenv");
    }
  });
});
