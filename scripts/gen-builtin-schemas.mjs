#!/usr/bin/env node
/**
 * Dev-time generator of src/registry/builtin/generated/workload-types.json, the
 * field facts of the built-in kinds made from Kubernetes' Go types: the workload
 * kinds (Pod, Node, Service, Deployment, Job, ...), RBAC's roles and bindings, and
 * the admission webhook configurations.
 *
 *   node scripts/gen-builtin-schemas.mjs <clone of kubernetes/api> [git ref]
 *
 * It reads the Go structs of a kubernetes/api clone (default ref release-1.32)
 * and writes, per struct reachable from the kinds below, its fields: json name,
 * Go type mapped to a schema type, required, list/map markers, patch strategy
 * and merge key, and the protobuf facts (field number, wire kind, repeated,
 * pointer, omitempty). Only facts are kept: no comment text of the Go sources.
 * The artifact is committed; CI never runs this script.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const clone = process.argv[2];
const ref = process.argv[3] ?? "release-1.32";
if (!clone) {
  console.error("usage: node scripts/gen-builtin-schemas.mjs <kubernetes/api clone> [ref]");
  process.exit(2);
}

/** Packages read, with their import path and definition-name prefix. */
const PACKAGES = {
  "core/v1": "io.k8s.api.core.v1",
  "apps/v1": "io.k8s.api.apps.v1",
  "batch/v1": "io.k8s.api.batch.v1",
  "discovery/v1": "io.k8s.api.discovery.v1",
  "networking/v1": "io.k8s.api.networking.v1",
  "policy/v1": "io.k8s.api.policy.v1",
  "rbac/v1": "io.k8s.api.rbac.v1",
  "admissionregistration/v1": "io.k8s.api.admissionregistration.v1",
};

/** The roots: every struct reachable from these is written. */
const ROOTS = [
  "core/v1.Pod",
  "core/v1.Node",
  "core/v1.Service",
  "core/v1.Endpoints",
  "core/v1.PodTemplate",
  "core/v1.Binding",
  "core/v1.ReplicationController",
  "core/v1.PersistentVolumeClaim",
  "core/v1.PersistentVolume",
  "apps/v1.Deployment",
  "apps/v1.ReplicaSet",
  "apps/v1.ControllerRevision",
  "apps/v1.DaemonSet",
  "apps/v1.StatefulSet",
  "batch/v1.Job",
  "batch/v1.CronJob",
  "discovery/v1.EndpointSlice",
  "networking/v1.Ingress",
  "networking/v1.IngressClass",
  "policy/v1.PodDisruptionBudget",
  "policy/v1.Eviction",
  "rbac/v1.Role",
  "rbac/v1.ClusterRole",
  "rbac/v1.RoleBinding",
  "rbac/v1.ClusterRoleBinding",
  "admissionregistration/v1.ValidatingWebhookConfiguration",
  "admissionregistration/v1.MutatingWebhookConfiguration",
  "admissionregistration/v1.ValidatingAdmissionPolicy",
  "admissionregistration/v1.ValidatingAdmissionPolicyBinding",
];

/** Types from other modules, by import path and name. */
const EXTERNAL = {
  "k8s.io/apimachinery/pkg/apis/meta/v1.Time": { kind: "time" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime": { kind: "microTime" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": { kind: "string" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta": { kind: "meta", name: "ObjectMeta" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.ListMeta": { kind: "meta", name: "ListMeta" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelector": { kind: "meta", name: "LabelSelector" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.Condition": { kind: "meta", name: "Condition" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.DeleteOptions": { kind: "meta", name: "DeleteOptions" },
  "k8s.io/apimachinery/pkg/api/resource.Quantity": { kind: "quantity" },
  "k8s.io/apimachinery/pkg/util/intstr.IntOrString": { kind: "intOrString" },
  "k8s.io/apimachinery/pkg/types.UID": { kind: "string" },
  "k8s.io/apimachinery/pkg/apis/meta/v1.StatusReason": { kind: "string" },
  "k8s.io/apimachinery/pkg/runtime.RawExtension": { kind: "raw" },
};

const PRIMITIVES = {
  string: { kind: "string" },
  bool: { kind: "bool" },
  int32: { kind: "int32" },
  int64: { kind: "int64" },
  int: { kind: "int64" },
  uint16: { kind: "int32" },
  float64: { kind: "double" },
  float32: { kind: "float" },
};

function git(...args) {
  return execFileSync("git", ["-C", clone, ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
}

/** A Go file's text without its block comments (which are prose only). */
function readGo(file) {
  return git("show", `${ref}:${file}`).replace(/\/\*[\s\S]*?\*\//g, "");
}

/** pkg → { imports: alias → path, types: name → { expr, struct?, comments } } */
const pkgs = {};

function parsePackage(pkg) {
  const files = git("ls-tree", "--name-only", ref, `${pkg}/`)
    .split("\n")
    .filter((f) => f.endsWith(".go") && !f.includes("generated") && !f.endsWith("_test.go"));
  const out = { types: {} };
  for (const f of files) {
    const src = readGo(f);
    const imports = parseImports(src);
    parseTypes(src, imports, out.types);
  }
  pkgs[pkg] = out;
}

function parseImports(src) {
  const imports = {};
  const block = src.match(/^import \(([\s\S]*?)^\)/m);
  const lines = block ? block[1].split("\n") : [];
  const single = src.match(/^import ((?:\w+ )?"[^"]+")$/m);
  if (single) lines.push(single[1]);
  for (const line of lines) {
    const m = line.trim().match(/^(?:(\w+)\s+)?"([^"]+)"$/);
    if (!m) continue;
    const alias = m[1] ?? m[2].split("/").pop();
    imports[alias] = m[2];
  }
  return imports;
}

/** Comment markers (`+name=value`) of a comment block, without the prose. */
function markers(commentLines) {
  const out = {};
  for (const c of commentLines) {
    const m = c.match(/^\s*\/\/\s*\+([\w.:-]+)(?:=(.*))?$/);
    if (m) out[m[1]] = m[2] === undefined ? true : m[2].trim();
  }
  return out;
}

function parseTypes(src, imports, types) {
  const lines = src.split("\n");
  let comments = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*\/\//.test(line)) {
      comments.push(line);
      continue;
    }
    const struct = line.match(/^type (\w+) struct \{\s*$/);
    if (struct) {
      const fields = [];
      let fc = [];
      i++;
      for (; i < lines.length && !/^\}/.test(lines[i]); i++) {
        const l = lines[i];
        if (/^\s*\/\//.test(l)) {
          fc.push(l);
          continue;
        }
        if (l.trim() === "") {
          fc = [];
          continue;
        }
        const fm = l.match(/^\s*(?:(\w+)\s+)?([^\s`]+)\s*(?:`(.*)`)?\s*$/);
        if (fm) fields.push({ goName: fm[1], expr: fm[2], tag: fm[3] ?? "", markers: markers(fc) });
        fc = [];
      }
      types[line.match(/^type (\w+)/)[1]] = {
        struct: fields,
        imports,
        markers: markers(comments),
      };
      comments = [];
      continue;
    }
    const alias = line.match(/^type (\w+) (?:= )?(\S.*?)\s*(?:\/\/.*)?$/);
    if (alias && !alias[2].startsWith("struct") && !alias[2].startsWith("interface")) {
      types[alias[1]] = { expr: alias[2], imports, markers: markers(comments) };
    }
    comments = [];
  }
}

function tagValue(tag, key) {
  const m = tag.match(new RegExp(`(?:^|\\s)${key}:"([^"]*)"`));
  return m ? m[1] : undefined;
}

/** Definitions written, by definition name. */
const definitions = {};
const queue = [];

function definitionName(pkg, name) {
  return `${PACKAGES[pkg]}.${name}`;
}

/** The artifact's type for a Go type expression read in `pkg`. */
function typeOf(expr, pkg, imports) {
  if (expr.startsWith("*")) return typeOf(expr.slice(1), pkg, imports);
  if (expr === "[]byte") return { kind: "bytes" };
  if (expr.startsWith("[]")) return { kind: "array", items: typeOf(expr.slice(2), pkg, imports) };
  const map = expr.match(/^map\[([^\]]+)\](.+)$/);
  if (map) return { kind: "map", values: typeOf(map[2], pkg, imports) };
  if (PRIMITIVES[expr]) return PRIMITIVES[expr];
  const dot = expr.indexOf(".");
  if (dot >= 0) {
    const path = imports[expr.slice(0, dot)];
    const name = expr.slice(dot + 1);
    const ext = EXTERNAL[`${path}.${name}`];
    if (ext) return ext;
    const other = path?.replace(/^k8s\.io\/api\//, "");
    if (other && PACKAGES[other]) return named(other, name);
    throw new Error(`unknown type ${expr} (${path})`);
  }
  return named(pkg, expr);
}

/** A named type of a package: a struct is a reference, anything else its underlying type. */
function named(pkg, name) {
  const t = pkgs[pkg].types[name];
  if (!t) throw new Error(`type ${pkg}.${name} not found`);
  if (!t.struct) {
    const under = typeOf(t.expr, pkg, t.imports);
    return t.markers.enum ? { ...under, enum: name } : under;
  }
  const def = definitionName(pkg, name);
  if (!definitions[def] && !queue.some((q) => q.def === def)) queue.push({ pkg, name, def });
  return { kind: "ref", ref: def };
}

function protobufFacts(tag) {
  const pb = tagValue(tag, "protobuf");
  if (!pb) return undefined;
  const parts = pb.split(",");
  const out = { wire: parts[0], number: Number(parts[1]), repeated: parts[2] === "rep" };
  for (const p of parts.slice(3)) {
    const [k, v] = p.split("=");
    if (k === "casttype" || k === "castkey" || k === "castvalue") continue;
    if (k === "name") out.name = v;
  }
  return out;
}

function buildStruct({ pkg, name, def }) {
  const t = pkgs[pkg].types[name];
  const fields = [];
  for (const f of t.struct) {
    const json = tagValue(f.tag, "json");
    if (json === "-") continue;
    const [jsonName, ...opts] = (json ?? "").split(",");
    const omitempty = opts.includes("omitempty");
    const inline = opts.includes("inline") || (f.goName === undefined && !jsonName);
    if (f.expr === "metav1.TypeMeta") continue;
    const pointer = f.expr.startsWith("*");
    const out = {
      name: inline ? "" : jsonName,
      type: typeOf(f.expr, pkg, t.imports),
    };
    if (inline) out.inline = true;
    const optional = f.markers.optional === true;
    if (!inline && !omitempty && !optional) out.required = true;
    if (optional) out.optional = true;
    if (omitempty) out.omitempty = true;
    if (pointer) out.pointer = true;
    if (f.markers.listType) out.listType = f.markers.listType;
    if (f.markers.listMapKey) out.listMapKeys = collectRepeated(f, "listMapKey");
    if (f.markers.mapType) out.mapType = f.markers.mapType;
    if (f.markers.structType) out.structType = f.markers.structType;
    const strategy = tagValue(f.tag, "patchStrategy");
    const mergeKey = tagValue(f.tag, "patchMergeKey");
    if (strategy) out.patchStrategy = strategy;
    if (mergeKey) out.patchMergeKey = mergeKey;
    const pb = protobufFacts(f.tag);
    if (pb) out.protobuf = pb;
    fields.push(out);
  }
  const entry = { fields };
  if (t.markers.structType) entry.structType = t.markers.structType;
  definitions[def] = entry;
}

/** Every value of a repeatable marker on a field, in source order. */
function collectRepeated(field, marker) {
  return field.repeated?.[marker] ?? [field.markers[marker]];
}

for (const pkg of Object.keys(PACKAGES)) parsePackage(pkg);

// Repeatable markers: re-read each struct field's comment block for all values.
for (const pkg of Object.keys(PACKAGES)) {
  for (const t of Object.values(pkgs[pkg].types)) {
    if (!t.struct) continue;
    for (const f of t.struct) f.repeated = {};
  }
}
for (const pkg of Object.keys(PACKAGES)) attachRepeated(pkg);

function attachRepeated(pkg) {
  const files = git("ls-tree", "--name-only", ref, `${pkg}/`)
    .split("\n")
    .filter((f) => f.endsWith(".go") && !f.includes("generated") && !f.endsWith("_test.go"));
  for (const file of files) {
    const lines = readGo(file).split("\n");
    let current;
    let index = 0;
    let block = [];
    for (const l of lines) {
      const s = l.match(/^type (\w+) struct \{\s*$/);
      if (s) {
        current = pkgs[pkg].types[s[1]];
        index = 0;
        block = [];
        continue;
      }
      if (!current) continue;
      if (/^\}/.test(l)) {
        current = undefined;
        continue;
      }
      if (/^\s*\/\//.test(l)) {
        block.push(l);
        continue;
      }
      if (l.trim() === "") {
        block = [];
        continue;
      }
      const f = current.struct[index++];
      if (f) {
        for (const c of block) {
          const m = c.match(/^\s*\/\/\s*\+listMapKey=(.*)$/);
          if (!m) continue;
          f.repeated.listMapKey ??= [];
          f.repeated.listMapKey.push(m[1].trim());
        }
      }
      block = [];
    }
  }
}

for (const root of ROOTS) {
  const [pkg, name] = root.split(".");
  named(pkg, name);
}
while (queue.length) buildStruct(queue.shift());

const sorted = {};
for (const k of Object.keys(definitions).sort()) sorted[k] = definitions[k];
const artifact = {
  source: `kubernetes/api ${ref}`,
  roots: ROOTS.map((r) => {
    const [pkg, name] = r.split(".");
    return definitionName(pkg, name);
  }),
  definitions: sorted,
};
const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "src/registry/builtin/generated/workload-types.json");
writeFileSync(target, `${JSON.stringify(artifact, null, 1)}\n`);
console.log(`wrote ${Object.keys(sorted).length} definitions to ${target}`);
