/**
 * The local image store: content-addressed builds (the same tree gives the same
 * digest, a changed file a new one), tags, references as Pods write them, npm
 * tarballs, the shipped demo images, and `setpoint image build`/`ls` as a user runs them.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  BUILTIN_IMAGES,
  ImageNotFoundError,
  ImageStore,
  importBuiltinImages,
  parseImageReference,
} from "../../src/agent/images/index.ts";
import { runCli } from "../cli/helpers.ts";

const dirs: string[] = [];
function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function appDir(text: string): string {
  const dir = tempDir("setpoint-img-src-");
  writeFileSync(
    join(dir, "setpoint-image.json"),
    JSON.stringify({ entrypoint: ["node", "main.mjs"], env: { GREETING: "hi" } }),
  );
  writeFileSync(join(dir, "main.mjs"), text);
  mkdirSync(join(dir, "lib"));
  writeFileSync(join(dir, "lib", "run.sh"), "#!/bin/sh\necho run\n");
  chmodSync(join(dir, "lib", "run.sh"), 0o755);
  return dir;
}

describe("image references", () => {
  it("parse as Kubernetes reads them: default tag, registry prefix, digest", () => {
    expect(parseImageReference("hello")).toEqual({ name: "hello", tag: "latest" });
    expect(parseImageReference("docker.io/library/hello:1.0")).toEqual({
      name: "hello",
      tag: "1.0",
    });
    expect(parseImageReference("localhost:5000/team/app:v2")).toEqual({
      name: "team/app",
      tag: "v2",
    });
    const digest = `sha256:${"a".repeat(64)}`;
    expect(parseImageReference(`hello@${digest}`)).toEqual({ name: "hello", digest });
    expect(parseImageReference("Hello:1")).toBeUndefined();
    expect(parseImageReference("hello@sha256:xyz")).toBeUndefined();
  });
});

describe("the image store", () => {
  it("stores a directory under its content digest, the same tree giving the same digest", () => {
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    const a = store.build(appDir("console.log(1)\n"), ["app:1"]);
    const again = store.build(appDir("console.log(1)\n"), ["app:same"]);
    const changed = store.build(appDir("console.log(2)\n"), ["app:2"]);
    expect(a.digest).toMatch(/^sha256:[a-f0-9]{64}$/);
    expect(again.digest).toBe(a.digest);
    expect(changed.digest).not.toBe(a.digest);
    expect(store.digests().sort()).toEqual([a.digest, changed.digest].sort());

    const resolved = store.resolve("docker.io/library/app:1");
    expect(resolved.digest).toBe(a.digest);
    expect(resolved.manifest).toEqual({
      entrypoint: ["node", "main.mjs"],
      env: { GREETING: "hi" },
    });
    expect(store.resolve(`app@${changed.digest}`).digest).toBe(changed.digest);
    expect(store.list().map((i) => `${i.name}:${i.tag}`)).toEqual(["app:1", "app:2", "app:same"]);
  });

  it("counts the executable bit: a file made executable is another image", () => {
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    const src = appDir("x\n");
    const before = store.build(src, ["app:a"]).digest;
    chmodSync(join(src, "main.mjs"), 0o755);
    expect(store.build(src, ["app:b"]).digest).not.toBe(before);
  });

  it("moves a tag to the new image (a new tag or a retag is a new rollout)", () => {
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    store.build(appDir("1\n"), ["app:latest"]);
    const second = store.build(appDir("2\n"), ["app:latest"]);
    expect(store.resolve("app").digest).toBe(second.digest);
  });

  it("says how to build an image it does not hold", () => {
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    expect(() => store.resolve("nope:1")).toThrow(ImageNotFoundError);
    expect(() => store.resolve("nope:1")).toThrow(/setpoint image build DIR --tag nope:1/);
    expect(() => store.resolve("Not A Ref")).toThrow(/invalid reference format/);
  });

  it("refuses a directory without a manifest or package.json", () => {
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    expect(() => store.build(tempDir("setpoint-empty-"), ["x:1"])).toThrow(/setpoint-image.json/);
    expect(store.digests()).toEqual([]);
  });

  it("builds from an npm package tarball, running its bin", () => {
    const pkg = tempDir("setpoint-img-pkg-");
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({ name: "tiny", version: "1.0.0", bin: { tiny: "cli.js" } }),
    );
    writeFileSync(join(pkg, "cli.js"), "console.log('tiny')\n");
    const out = tempDir("setpoint-img-pack-");
    const file = execFileSync("npm", ["pack", "--pack-destination", out], {
      cwd: pkg,
      encoding: "utf8",
      env: { ...process.env, npm_config_loglevel: "silent" },
    }).trim();
    const store = new ImageStore(tempDir("setpoint-img-store-"));
    const built = store.build(join(out, file.split("\n").pop() ?? ""), ["tiny:1.0.0"]);
    expect(built.manifest).toEqual({ entrypoint: ["node", "cli.js"] });
    expect(store.resolve("tiny:1.0.0").digest).toBe(built.digest);
  });

  it("imports the shipped demo images once, with a stable digest", () => {
    const one = new ImageStore(tempDir("setpoint-img-store-"));
    const two = new ImageStore(tempDir("setpoint-img-store-"));
    expect(importBuiltinImages(one)).toEqual(BUILTIN_IMAGES.flatMap((i) => i.tags));
    expect(importBuiltinImages(one)).toEqual([]);
    importBuiltinImages(two);
    expect(one.resolve("hello").digest).toBe(two.resolve("hello:2.0").digest);
    expect(one.resolve("hello").manifest.entrypoint).toEqual(["node", "server.mjs"]);
  });
});

describe("setpoint image", () => {
  it("builds and lists images", async () => {
    const store = tempDir("setpoint-img-cli-");
    const built = await runCli([
      "image",
      "build",
      appDir("x\n"),
      "--tag",
      "app:1",
      "--image-dir",
      store,
    ]);
    expect(built.stderr).toBe("");
    expect(built.code).toBe(0);
    const digest = built.stdout.split("\n")[0];
    expect(digest).toBe(new ImageStore(store).resolve("app:1").digest);
    const ls = await runCli(["image", "ls", "--image-dir", store]);
    expect(ls.code).toBe(0);
    const lines = ls.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+TAG\s+DIGEST\s+CREATED$/);
    expect(lines[1]).toMatch(new RegExp(`^app\\s+1\\s+${digest.slice(0, 19)}\\s+\\d{4}-`));
  });

  it("refuses a build without a tag", async () => {
    const res = await runCli(["image", "build", appDir("x\n"), "--image-dir", tempDir("s-")]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("image build needs --tag NAME:TAG");
  });
});
