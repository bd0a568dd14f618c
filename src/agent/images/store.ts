/**
 * The local image store: images as content-addressed directories, and tags.
 *
 *   ROOT/sha256/<hex>/manifest.json   the image's manifest (manifest.ts)
 *   ROOT/sha256/<hex>/rootfs/          the image's files, read by the processes
 *   ROOT/tags.json                     { "name:tag": "sha256:<hex>" }
 *
 * Building copies a directory (or an npm package tarball, unpacked) into a
 * temporary directory, digests it (digest.ts) and renames it into place, then
 * points the tags at it; an image already stored under that digest is reused.
 * Every write is a rename, so a reader never sees half an image or half a tag
 * table. Several agents on one machine may share one store.
 */
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { writeFileAtomic } from "../../dataplane/index.ts";
import { treeDigest } from "./digest.ts";
import { type ImageManifest, MANIFEST_FILE, parseManifest } from "./manifest.ts";
import { type ImageReference, parseImageReference, tagKey } from "./reference.ts";

/** An image found in the store. */
export interface StoredImage {
  /** "sha256:<hex>". */
  digest: string;
  /** The directory a process runs in (the image's files). */
  rootfs: string;
  manifest: ImageManifest;
}

/** A row of `setpoint image ls`. */
export interface ImageListing {
  name: string;
  tag: string;
  digest: string;
  /** When the image was stored, from its directory. */
  created: Date;
}

/** A reference that names no stored image, or is not a reference at all. */
export class ImageNotFoundError extends Error {
  override name = "ImageNotFoundError";
}

export class ImageStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  private get tagsFile(): string {
    return join(this.root, "tags.json");
  }

  private imageDir(digest: string): string {
    return join(this.root, "sha256", digest.slice("sha256:".length));
  }

  /** The tag table (empty when nothing was stored yet). */
  tags(): Record<string, string> {
    try {
      return JSON.parse(readFileSync(this.tagsFile, "utf8")) as Record<string, string>;
    } catch {
      return {};
    }
  }

  /**
   * Stores the image built from `source` (a directory holding setpoint-image.json,
   * or an npm package tarball `.tgz`) and points `tags` ("name:tag") at it.
   */
  build(source: string, tags: readonly string[]): StoredImage {
    const refs = tags.map((t) => {
      const ref = parseImageReference(t);
      if (!ref || ref.digest) throw new Error(`not an image name:tag: ${JSON.stringify(t)}`);
      return ref;
    });
    mkdirSync(join(this.root, "sha256"), { recursive: true });
    const work = mkdtempSync(join(this.root, ".build-"));
    try {
      const rootfs = join(work, "rootfs");
      if (statSync(source).isDirectory()) {
        cpSync(source, rootfs, { recursive: true, verbatimSymlinks: true });
      } else {
        unpackNpmTarball(source, work, rootfs);
      }
      const manifest = readManifest(rootfs);
      const digest = treeDigest(rootfs);
      const dir = this.imageDir(digest);
      if (!existsSync(dir)) {
        writeFileAtomic(join(work, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
        renameSync(work, dir);
      }
      this.setTags(refs, digest);
      return { digest, rootfs: join(dir, "rootfs"), manifest };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  /** Points each reference's tag at `digest`. */
  setTags(refs: readonly ImageReference[], digest: string): void {
    if (refs.length === 0) return;
    const table = this.tags();
    for (const ref of refs) table[tagKey(ref)] = digest;
    writeFileAtomic(this.tagsFile, `${JSON.stringify(table, null, 2)}\n`);
  }

  /** The image a Pod's `image` names; throws ImageNotFoundError when there is none. */
  resolve(image: string): StoredImage {
    const ref = parseImageReference(image);
    if (!ref) throw new ImageNotFoundError(`invalid reference format: ${JSON.stringify(image)}`);
    const digest = ref.digest ?? this.tags()[tagKey(ref)];
    const dir = digest ? this.imageDir(digest) : undefined;
    if (!digest || !dir || !existsSync(join(dir, "manifest.json"))) {
      throw new ImageNotFoundError(
        `image ${JSON.stringify(image)} is not in the local image store ${this.root} (build it with: setpoint image build DIR --tag ${tagKey(ref)})`,
      );
    }
    const manifest = parseManifest(JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")));
    return { digest, rootfs: join(dir, "rootfs"), manifest };
  }

  /** Every tag with its image, sorted by name and tag. */
  list(): ImageListing[] {
    const out: ImageListing[] = [];
    for (const [key, digest] of Object.entries(this.tags())) {
      const colon = key.lastIndexOf(":");
      let created = new Date(0);
      try {
        created = statSync(this.imageDir(digest)).mtime;
      } catch {
        continue;
      }
      out.push({ name: key.slice(0, colon), tag: key.slice(colon + 1), digest, created });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name) || a.tag.localeCompare(b.tag));
  }

  /** Digests stored, tagged or not. */
  digests(): string[] {
    try {
      return readdirSync(join(this.root, "sha256")).map((hex) => `sha256:${hex}`);
    } catch {
      return [];
    }
  }
}

/** The manifest of a tree: setpoint-image.json, or else one made from package.json. */
function readManifest(rootfs: string): ImageManifest {
  const file = join(rootfs, MANIFEST_FILE);
  if (existsSync(file)) return parseManifest(JSON.parse(readFileSync(file, "utf8")));
  const pkgFile = join(rootfs, "package.json");
  if (existsSync(pkgFile)) {
    const pkg = JSON.parse(readFileSync(pkgFile, "utf8")) as {
      main?: string;
      bin?: string | Record<string, string>;
    };
    const bin = typeof pkg.bin === "string" ? pkg.bin : Object.values(pkg.bin ?? {})[0];
    const main = bin ?? pkg.main ?? "index.js";
    return parseManifest({ entrypoint: ["node", main] });
  }
  throw new Error(`${rootfs}: no ${MANIFEST_FILE} (and no package.json to make one from)`);
}

/** Unpacks an npm tarball (files under package/) into `rootfs`. */
function unpackNpmTarball(tarball: string, work: string, rootfs: string): void {
  const tmp = join(work, "unpack");
  mkdirSync(tmp);
  execFileSync("tar", ["-xzf", resolve(tarball), "-C", tmp], { stdio: "pipe" });
  const top = readdirSync(tmp);
  const inner = top.length === 1 ? join(tmp, top[0]) : tmp;
  renameSync(inner, rootfs);
}
