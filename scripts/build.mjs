#!/usr/bin/env node
// Builds dist/: the `setpoint` command bundled into ES modules (an entry and the
// chunks its subcommands load when they run; plus the SQLite
// writer thread's entry and the protocol files read at run time), so the command
// starts without compiling TypeScript module by module; and the package's library
// entry, `setpoint/testenv` (dist/testenv.mjs with its declarations in dist/types/),
// which imports @setpoint/runtime and @setpoint/api by name rather than holding a copy
// of them, so a consumer's runtime and test environment share their classes. bin/setpoint.mjs runs the
// bundle when it is newer than every source file, and the sources through tsx
// otherwise. Runs on `npm install` (prepare) and before `npm start`
// (`--if-stale`: only when a source file is newer than the bundle).
//
// `--outdir DIR --entry NAME=FILE ...` builds other entry points the same way into DIR
// (which must lie inside this package, so the bundles find its node_modules): the API
// benchmark runs its server child so, compiled as the command is (bench/lib/child-server.ts).
import { cpSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build } from "esbuild";
import { rewriteDeclarations } from "./build-packages.mjs";
import { bundleIsFresh } from "./fresh.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    "if-stale": { type: "boolean", default: false },
    outdir: { type: "string" },
    entry: { type: "string", multiple: true },
  },
});

const custom = values.entry !== undefined;
const dist = resolve(values.outdir ?? join(root, "dist"));
const entryPoints = custom
  ? Object.fromEntries(
      values.entry.map((e) => {
        const eq = e.indexOf("=");
        if (eq <= 0) throw new Error(`--entry wants NAME=FILE, got ${e}`);
        return [e.slice(0, eq), resolve(e.slice(eq + 1))];
      }),
    )
  : { setpoint: join(root, "src/cli/main.ts") };
const staging = join(dirname(dist), `.${basename(dist)}-${process.pid}`);

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "linked",
  logLevel: "warning",
  outdir: staging,
  outExtension: { ".js": ".mjs" },
};

if (values["if-stale"] && !custom && bundleIsFresh()) process.exit(0);

rmSync(staging, { recursive: true, force: true });
mkdirSync(staging, { recursive: true });
try {
  // Split: each subcommand's code is a chunk of its own beside the entry, loaded
  // when that command runs.
  await build({ ...common, entryPoints, splitting: true });
  // The writer thread is started from the bundle's own folder (see
  // src/storage/sqlite/writer-thread-client.ts), already compiled.
  await build({
    ...common,
    entryPoints: { "writer-thread-boot": join(root, "src/storage/sqlite/writer-thread.ts") },
  });
  if (!custom) {
    await build({
      ...common,
      entryPoints: {
        testenv: join(root, "src/testenv/index.ts"),
        // startTestEnv({ process: "child" }) forks it from beside the testenv bundle.
        "child-main": join(root, "src/testenv/child-main.ts"),
      },
      external: ["@setpoint/*"],
    });
    // Loaded only when building: `--if-stale` with a fresh bundle exits above without it.
    const { default: ts } = await import("typescript");
    writeDeclarations(
      ts,
      join(root, "src/testenv"),
      ["index.ts", "testenv.ts", "test-env-types.ts", "webhook-certificate.ts"],
      join(staging, "types/testenv"),
    );
  }
  // Protocol descriptions loaded at run time, relative to the module that reads them.
  cpSync(join(root, "src/storage/etcd/proto"), join(staging, "proto"), { recursive: true });
  cpSync(join(root, "src/apiserver/wire/protobuf"), join(staging, "protobuf"), {
    recursive: true,
    filter: (src) => !src.endsWith(".ts"),
  });
  // Swap in whole, so a concurrent reader never sees half a build.
  const old = join(dirname(dist), `.${basename(dist)}-old-${process.pid}`);
  try {
    renameSync(dist, old);
  } catch {
    // no previous build
  }
  renameSync(staging, dist);
  rmSync(old, { recursive: true, force: true });
} catch (err) {
  rmSync(staging, { recursive: true, force: true });
  throw err;
}

/**
 * Declarations of a library entry's files, each from its own text (its exports carry
 * their types, so no program is needed). They may import only each other and
 * packages: a relative import of anything else would point outside what is shipped.
 */
function writeDeclarations(ts, dir, files, out) {
  mkdirSync(out, { recursive: true });
  for (const file of files) {
    const { outputText, diagnostics } = ts.transpileDeclaration(
      readFileSync(join(dir, file), "utf8"),
      {
        fileName: file,
        compilerOptions: {
          module: ts.ModuleKind.NodeNext,
          target: ts.ScriptTarget.ES2022,
          isolatedDeclarations: true,
          strict: true,
        },
      },
    );
    if (diagnostics?.length) {
      throw new Error(
        `declarations of ${file}: ${ts.formatDiagnostics(diagnostics, {
          getCanonicalFileName: (f) => f,
          getCurrentDirectory: () => dir,
          getNewLine: () => "\n",
        })}`,
      );
    }
    for (const [, spec] of outputText.matchAll(/from\s+["'](\.{1,2}\/[^"']*)["']/g)) {
      if (!files.includes(spec.replace(/^\.\//, ""))) {
        throw new Error(`declarations of ${file} import ${spec}, which is not shipped`);
      }
    }
    writeFileSync(join(out, file.replace(/\.ts$/, ".d.ts")), outputText);
  }
  rewriteDeclarations(out);
}
