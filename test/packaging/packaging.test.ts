/**
 * The packages as another project gets them: @setpoint/api, @setpoint/runtime
 * and setpoint packed with `npm pack`, installed from those tarballs into a
 * temporary project with a strict tsconfig (consumer/: `strict`,
 * `noUncheckedIndexedAccess`, `exactOptionalPropertyTypes`, the default
 * libraries, no `skipLibCheck`), which is type-checked, compiled, and whose
 * controller test runs with Node's test runner against setpoint/testenv.
 *
 * Installing reads the npm cache first (`--prefer-offline`) and runs no install
 * scripts: the one native addon (better-sqlite3, the server's SQLite, never the
 * runtime's) is taken already built from this checkout's node_modules, same
 * version, instead of being compiled again (minutes on a busy machine).
 */
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONSUMER = fileURLToPath(new URL("./consumer/", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const VERSION: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;

interface Packed {
  name: string;
  filename: string;
  files: { path: string }[];
}

/** The environment without what a surrounding `npm run` sets (workspace, prefix, script). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^npm_/i.test(k)) env[k] = v;
  }
  return env;
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  timeoutMs = 240_000,
): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: cleanEnv(), timeout: timeoutMs });
  if (r.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(" ")} (in ${cwd}) exited ${r.status ?? r.signal}\n${r.stdout}\n${r.stderr}`,
    );
  }
  return r;
}

/** The package.json of `name` as installed for the package in `from` (Node's lookup). */
function installed(name: string, from: string): { dir: string; json: Record<string, unknown> } {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) {
      return {
        dir: candidate,
        json: JSON.parse(readFileSync(join(candidate, "package.json"), "utf8")),
      };
    }
    if (dirname(dir) === dir) throw new Error(`${name} is not installed for ${from}`);
  }
}

/** Packages in the dependency closure of `name` (installed under `project`) that build native code. */
function nativeDependencies(project: string, name: string): string[] {
  const native: string[] = [];
  const seen = new Set<string>();
  const visit = (dep: string, from: string) => {
    const { dir, json } = installed(dep, from);
    if (seen.has(dir)) return;
    seen.add(dir);
    const scripts = (json.scripts ?? {}) as Record<string, string>;
    if (
      json.gypfile === true ||
      existsSync(join(dir, "binding.gyp")) ||
      scripts.install !== undefined ||
      scripts.preinstall !== undefined ||
      scripts.postinstall !== undefined
    ) {
      native.push(dep);
    }
    for (const d of Object.keys((json.dependencies ?? {}) as Record<string, string>)) visit(d, dir);
  };
  visit(name, project);
  return native;
}

describe("the packages installed into a project of its own", () => {
  let work: string;
  let project: string;
  let packed: Packed[];

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "setpoint-packaging-"));
    // What prepare builds on `npm ci`, from the sources as they are now.
    run(process.execPath, [join(ROOT, "scripts/build-packages.mjs")], ROOT);
    run(process.execPath, [join(ROOT, "scripts/build.mjs"), "--if-stale"], ROOT);
    const pack = run(
      "npm",
      ["pack", "--ignore-scripts", "--json", "--workspaces", "--include-workspace-root"].concat([
        "--pack-destination",
        work,
      ]),
      ROOT,
    );
    packed = JSON.parse(pack.stdout);
    const tarball = (name: string) => {
      const p = packed.find((t) => t.name === name);
      if (!p) throw new Error(`npm pack made no tarball of ${name}`);
      return `file:${join(work, p.filename)}`;
    };

    project = join(work, "consumer");
    cpSync(CONSUMER, project, { recursive: true });
    const typesNode: string = JSON.parse(
      readFileSync(join(ROOT, "node_modules/@types/node/package.json"), "utf8"),
    ).version;
    const manifest = {
      name: "consumer",
      private: true,
      type: "module",
      dependencies: {
        "@setpoint/api": tarball("@setpoint/api"),
        "@setpoint/runtime": tarball("@setpoint/runtime"),
      },
      devDependencies: { "@types/node": typesNode, setpoint: tarball("setpoint") },
    };
    writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    run(
      "npm",
      ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund"],
      project,
      300_000,
    );
    const sqlite = installed("better-sqlite3", join(project, "node_modules/setpoint"));
    const built = join(ROOT, "node_modules/better-sqlite3");
    const builtVersion = JSON.parse(readFileSync(join(built, "package.json"), "utf8")).version;
    if (sqlite.json.version !== builtVersion) {
      throw new Error(
        `better-sqlite3 ${sqlite.json.version} installed, ${builtVersion} built here`,
      );
    }
    mkdirSync(join(sqlite.dir, "build/Release"), { recursive: true });
    cpSync(
      join(built, "build/Release/better_sqlite3.node"),
      join(sqlite.dir, "build/Release/better_sqlite3.node"),
    );
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("packs each package with its compiled code and declarations, and no tests or benchmarks", () => {
    expect(packed.map((p) => p.name).sort()).toEqual([
      "@setpoint/api",
      "@setpoint/runtime",
      "setpoint",
    ]);
    for (const p of packed) {
      const paths = p.files.map((f) => f.path);
      expect(paths.filter((f) => /(^|\/)(test|tests|bench)\/|\.test\.|\.spec\./.test(f))).toEqual(
        [],
      );
      expect(paths.filter((f) => /^(src|packages)\//.test(f))).toEqual([]);
    }
    const runtime = packed.find((p) => p.name === "@setpoint/runtime")?.files.map((f) => f.path);
    expect(runtime).toContain("dist/index.js");
    expect(runtime).toContain("dist/index.d.ts");
    expect(runtime?.filter((f) => f !== "package.json" && !f.startsWith("dist/"))).toEqual([]);
    const server = packed.find((p) => p.name === "setpoint")?.files.map((f) => f.path);
    expect(server).toContain("dist/testenv.mjs");
    expect(server).toContain("dist/types/testenv/index.d.ts");
  });

  it("installs the runtime with no native dependency (the server has one: SQLite)", () => {
    expect(nativeDependencies(project, "@setpoint/runtime")).toEqual([]);
    expect(nativeDependencies(project, "setpoint")).toContain("better-sqlite3");
  });

  it("shares one runtime between the project and the test environment", () => {
    // setpoint's own dependency on @setpoint/runtime is the project's copy, not a second one.
    expect(existsSync(join(project, "node_modules/setpoint/node_modules/@setpoint"))).toBe(false);
  });

  it("type-checks a controller and its test under a strict tsconfig, without skipLibCheck", () => {
    const r = spawnSync(process.execPath, [TSC, "-p", project], { cwd: project, encoding: "utf8" });
    expect(`${r.stdout}${r.stderr}`).toBe("");
    expect(r.status).toBe(0);
  }, 120_000);

  it("runs the controller's test against setpoint/testenv", () => {
    const r = spawnSync(process.execPath, ["--test", join(project, "out/test/copier.spec.js")], {
      cwd: project,
      encoding: "utf8",
      env: cleanEnv(),
      timeout: 120_000,
    });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/# pass 1\b/);
  }, 150_000);

  it("runs the setpoint command installed from the tarball", () => {
    const r = run("npm", ["exec", "--offline", "--", "setpoint", "--version"], project, 60_000);
    expect(r.stdout.trim()).toBe(VERSION);
  }, 90_000);
});
