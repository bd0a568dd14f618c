/**
 * The runtime's public API (packages/runtime/src/index.ts) is whole: every runtime type
 * that an exported function, class member or type mentions can be imported
 * from it too, except the plumbing listed below (types only the runtime's own
 * parts pass between themselves). Types of the wire objects (KubeObject,
 * Status...) come from `setpoint/api`.
 */
import { fileURLToPath } from "node:url";
import * as runtime from "@setpoint/runtime";
import ts from "typescript";
import { expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ENTRY = `${ROOT}packages/runtime/src/index.ts`;

/** Mentioned by public signatures, but only for the runtime's own use. */
const PLUMBING = new Set([
  // How the builder hands a declaration to the manager (ControllerBuilder is a type export).
  "ControllerRegistrar",
  // What RuntimeMetrics gives the controllers and queues it serves.
  "ControllerMetrics",
  "InFlightSource",
  "ReconcileOutcome",
  // Constructor options of classes exported as types only.
  "ReconcileClientOptions",
  "WrittenObject",
  "WatchStreamOptions",
  // InformerOptions extends it; its fields are InformerOptions'.
  "ReflectorOptions",
]);

/** Runtime-declared types reachable from the exports' signatures that the entry does not export. */
function unexportedTypes(): Map<string, string> {
  const config = ts.parseJsonConfigFileContent(
    ts.readConfigFile(`${ROOT}tsconfig.json`, ts.sys.readFile).config,
    ts.sys,
    ROOT,
  );
  const program = ts.createProgram([ENTRY], { ...config.options, noEmit: true });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(ENTRY);
  if (!source) throw new Error("no entry");
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error("no module symbol");
  const resolve = (s: ts.Symbol) =>
    s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
  const exported = new Set(checker.getExportsOfModule(moduleSymbol).map(resolve));
  const inRuntime = (d: ts.Declaration) =>
    d.getSourceFile().fileName.includes("/packages/runtime/src/");
  const missing = new Map<string, string>();
  const visited = new Set<ts.Symbol>();

  const visitType = (node: ts.Node | undefined, from: string): void => {
    if (!node) return;
    const walk = (n: ts.Node): void => {
      if (ts.isTypeReferenceNode(n) || ts.isExpressionWithTypeArguments(n)) {
        const name = ts.isTypeReferenceNode(n) ? n.typeName : n.expression;
        const at = checker.getSymbolAtLocation(name);
        const sym = at && resolve(at);
        if (sym?.declarations?.some(inRuntime) && !(sym.flags & ts.SymbolFlags.TypeParameter)) {
          if (!exported.has(sym) && !missing.has(sym.getName())) missing.set(sym.getName(), from);
          visitSymbol(sym, `${from} > ${sym.getName()}`);
        }
      }
      ts.forEachChild(n, walk);
    };
    walk(node);
  };
  const visitMember = (d: ts.Node, from: string): void => {
    if (ts.isFunctionLike(d)) {
      for (const p of d.parameters) visitType(p.type, from);
      for (const tp of d.typeParameters ?? []) visitType(tp.constraint, from);
      visitType(d.type, from);
    } else if (ts.isPropertySignature(d) || ts.isPropertyDeclaration(d)) {
      visitType(d.type, from);
    }
  };
  const visitSymbol = (sym: ts.Symbol, from: string): void => {
    if (visited.has(sym)) return;
    visited.add(sym);
    for (const d of sym.declarations ?? []) {
      if (!inRuntime(d)) continue;
      if (ts.isClassDeclaration(d) || ts.isInterfaceDeclaration(d)) {
        for (const h of d.heritageClauses ?? []) for (const t of h.types) visitType(t, from);
        for (const m of d.members) {
          const flags = ts.getCombinedModifierFlags(m as ts.Declaration);
          if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
          if (m.name && ts.isPrivateIdentifier(m.name)) continue;
          visitMember(m, `${from}.${m.name?.getText() ?? "constructor"}`);
        }
      } else if (ts.isTypeAliasDeclaration(d)) {
        visitType(d.type, from);
      } else if (ts.isFunctionDeclaration(d)) {
        visitMember(d, from);
      } else if (ts.isVariableDeclaration(d)) {
        visitType(d.type, from);
      }
    }
  };
  for (const s of exported) visitSymbol(s, s.getName());
  return missing;
}

it("exports every runtime type its exported signatures mention (but plumbing)", () => {
  const missing = [...unexportedTypes()].filter(([name]) => !PLUMBING.has(name));
  expect(missing.map(([name, from]) => `${name} (via ${from})`)).toEqual([]);
}, 30_000);

it("exports values users need and no internal ones", () => {
  const values = Object.keys(runtime);
  for (const name of [
    "Manager",
    "Client",
    "InformerCache",
    "mapLimit",
    "WORKER_YIELD_INTERVAL_MS",
  ]) {
    expect(values).toContain(name);
  }
  // Constructed by the runtime only (exported as types).
  for (const name of ["ReconcileClient", "ReconcileRun", "WatchStream", "LabelledHistogram"]) {
    expect(values).not.toContain(name);
  }
});
