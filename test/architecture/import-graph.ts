/**
 * The import graph of the project's sources (src/ and packages/*\/src), read
 * statically with the TypeScript parser: every `import ... from`, `export ... from`,
 * `import x = require(...)` and `import("...")` with a literal specifier, resolved
 * to a file. Relative specifiers are resolved against the importing file; the
 * workspace packages' names (`@setpoint/...`) through tsconfig.json's `paths`;
 * anything else (node:, npm packages) is outside the graph.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

export interface ImportEdge {
  /** Importing file, relative to the root, with forward slashes. */
  from: string;
  /** Imported file, relative to the root. */
  to: string;
  /** The specifier as written. */
  specifier: string;
  /** True for `import type` / `export type` (erased at run time). */
  typeOnly: boolean;
}

export interface ImportGraph {
  files: string[];
  edges: ImportEdge[];
}

const SOURCE = /\.(ts|mts|mjs|js)$/;

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (SOURCE.test(name) && !name.endsWith(".d.ts")) out.push(full);
  }
}

/** The source roots: src/ and every packages/<name>/src. */
export function sourceRoots(root: string): string[] {
  const roots = [path.join(root, "src")];
  for (const pkg of readdirSync(path.join(root, "packages"))) {
    const src = path.join(root, "packages", pkg, "src");
    if (statSync(src, { throwIfNoEntry: false })?.isDirectory()) roots.push(src);
  }
  return roots;
}

/** tsconfig.json's `paths`, as exact specifier -> file (relative to the root). */
function workspacePaths(root: string): Map<string, string> {
  const config = ts.readConfigFile(path.join(root, "tsconfig.json"), ts.sys.readFile);
  const paths = (config.config?.compilerOptions?.paths ?? {}) as Record<string, string[]>;
  const out = new Map<string, string>();
  for (const [name, targets] of Object.entries(paths)) {
    if (targets[0]) out.set(name, path.normalize(targets[0]));
  }
  return out;
}

interface Specifier {
  text: string;
  typeOnly: boolean;
}

function specifiersOf(file: string, text: string): Specifier[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const out: Specifier[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      out.push({ text: node.moduleSpecifier.text, typeOnly });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const typeOnly =
        node.isTypeOnly ||
        (node.exportClause !== undefined &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      out.push({ text: node.moduleSpecifier.text, typeOnly });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      out.push({ text: node.moduleReference.expression.text, typeOnly: node.isTypeOnly });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      out.push({ text: node.arguments[0].text, typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const slash = (p: string): string => p.split(path.sep).join("/");

/** Reads the import graph of every source file under the source roots of `root`. */
export function readImportGraph(root: string): ImportGraph {
  const files: string[] = [];
  for (const dir of sourceRoots(root)) walk(dir, files);
  const known = new Set(files.map((f) => path.relative(root, f)));
  const aliases = workspacePaths(root);
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const from = path.relative(root, file);
    for (const spec of specifiersOf(file, readFileSync(file, "utf8"))) {
      let to: string | undefined;
      if (spec.text.startsWith(".")) to = path.normalize(path.join(path.dirname(from), spec.text));
      else to = aliases.get(spec.text);
      if (to === undefined) continue;
      // A JSON data file (a generated artifact) imports nothing: no edge needed.
      if (to.endsWith(".json") && statSync(path.join(root, to), { throwIfNoEntry: false })) {
        continue;
      }
      if (!known.has(to)) {
        throw new Error(
          `${slash(from)}: import "${spec.text}" resolves to no source file (${slash(to)})`,
        );
      }
      edges.push({
        from: slash(from),
        to: slash(to),
        specifier: spec.text,
        typeOnly: spec.typeOnly,
      });
    }
  }
  return { files: [...known].map(slash).sort(), edges };
}

/**
 * The strongly connected components of more than one node (or one node importing
 * itself) of a directed graph: each is a set of nodes that import each other,
 * directly or around a loop. Tarjan's algorithm, iterative.
 */
export function cyclesOf(
  nodes: Iterable<string>,
  next: (node: string) => Iterable<string>,
): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const out: string[][] = [];
  let counter = 0;
  for (const start of nodes) {
    if (index.has(start)) continue;
    const frames: { node: string; it: Iterator<string> }[] = [];
    const enter = (node: string): void => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      frames.push({ node, it: next(node)[Symbol.iterator]() });
    };
    enter(start);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const step = frame.it.next();
      if (!step.done) {
        const w = step.value;
        if (!index.has(w)) enter(w);
        else if (onStack.has(w)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(w)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== frame.node);
        const selfLoop = [...next(frame.node)].includes(frame.node);
        if (component.length > 1 || selfLoop) out.push(component.sort());
      }
    }
  }
  return out;
}
