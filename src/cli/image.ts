/**
 * `setpoint image`: the local image store the agent runs Pods from
 * (src/agent/images/). `build DIR|PACKAGE.tgz --tag NAME:TAG` stores an image,
 * `ls` lists the tags, `import-builtin` stores the demo images shipped with
 * Setpoint (the agent does this itself when it starts).
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ImageStore, importBuiltinImages } from "../agent/images/index.ts";
import { UsageError } from "./usage-error.ts";

/** Where images live unless --image-dir or $SETPOINT_IMAGES says otherwise (beside `up`'s data). */
export const DEFAULT_IMAGE_DIR = ".setpoint/images";

export const IMAGE_USAGE = `Usage: setpoint image <build|ls|import-builtin> [flags]

  build DIR|PACKAGE.tgz --tag NAME:TAG [--tag ...]
                    store the image built from DIR (holding setpoint-image.json:
                    entrypoint, cmd, env, workingDir) or from an npm package tarball
  ls                list images: name, tag, digest, created
  import-builtin    store the demo images shipped with Setpoint (hello)

Flags:
  --image-dir DIR   the image store (default $SETPOINT_IMAGES or ${DEFAULT_IMAGE_DIR})
`;

export function defaultImageDir(): string {
  return resolve(process.env.SETPOINT_IMAGES || DEFAULT_IMAGE_DIR);
}

export async function image(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      tag: { type: "string", short: "t", multiple: true },
      "image-dir": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  const [sub, ...rest] = positionals;
  if (values.help || sub === undefined) {
    process.stdout.write(IMAGE_USAGE);
    return values.help ? 0 : 2;
  }
  const store = new ImageStore(values["image-dir"] ?? defaultImageDir());
  switch (sub) {
    case "build": {
      if (rest.length !== 1) throw new UsageError("image build takes one DIR or PACKAGE.tgz");
      if (!values.tag?.length) throw new UsageError("image build needs --tag NAME:TAG");
      try {
        const built = store.build(rest[0], values.tag);
        process.stdout.write(`${built.digest}\n`);
        for (const t of values.tag) process.stdout.write(`tagged ${t}\n`);
        return 0;
      } catch (err) {
        process.stderr.write(`setpoint image build: ${(err as Error).message}\n`);
        return 1;
      }
    }
    case "ls": {
      const rows = store
        .list()
        .map((i) => [
          i.name,
          i.tag,
          i.digest.slice(0, 19),
          i.created.toISOString().replace(/\.\d+Z$/, "Z"),
        ]);
      const table = [["NAME", "TAG", "DIGEST", "CREATED"], ...rows];
      const widths = table[0].map((_, c) => Math.max(...table.map((r) => r[c].length)));
      for (const r of table) {
        process.stdout.write(
          `${r
            .map((v, c) => v.padEnd(widths[c]))
            .join("   ")
            .trimEnd()}\n`,
        );
      }
      return 0;
    }
    case "import-builtin": {
      const tags = importBuiltinImages(store);
      process.stdout.write(tags.length ? `imported ${tags.join(", ")}\n` : "nothing to import\n");
      return 0;
    }
    default:
      throw new UsageError(`unknown image command ${JSON.stringify(sub)}`);
  }
}
