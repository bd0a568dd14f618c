/**
 * Large YAML bodies parsed on a worker thread. The YAML parser costs some tens of
 * microseconds per value, all on the thread that runs it: a 1 MB body of 249,000
 * list items held the event loop for seconds, and every other client waited. On
 * the worker, that body takes as long, but only its own request waits.
 *
 * The thread (job-thread.ts) is started on first use, runs one parse at a time
 * (others queue), and does not keep the process alive.
 */
import { createRequire } from "node:module";
import { JobThread } from "./job-thread.ts";

/** What the worker answers: the document as JSON text and its duplicate keys, or why not. */
export type YamlThreadResult =
  | { ok: true; json: string | undefined; duplicates: string[] }
  | { ok: false; stage: "parse" | "convert"; message: string };

/**
 * The worker's code (runs in the thread, as CommonJS, with the yaml package's
 * path): parse, convert with the alias bound, serialize, and find repeated keys
 * down to `maxDepth`, as decodeYaml does on the main thread.
 */
function yamlWorkerMain(yamlPath: string): void {
  const threads = require("node:worker_threads") as typeof import("node:worker_threads");
  const YAML = require(yamlPath) as typeof import("yaml");
  const port = threads.parentPort;
  if (!port) return;
  const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`);
  const duplicatesOf = (node: unknown, path: string, out: string[], depth: number, max: number) => {
    if (depth > max) return;
    if (YAML.isMap(node)) {
      const seen = new Set<string>();
      for (const item of node.items) {
        if (!YAML.isPair(item)) continue;
        const k = YAML.isScalar(item.key) ? String(item.key.value) : String(item.key);
        const child = join(path, k);
        if (seen.has(k)) out.push(child);
        else seen.add(k);
        duplicatesOf(item.value, child, out, depth + 1, max);
      }
    } else if (YAML.isSeq(node)) {
      node.items.forEach((item, n) => {
        duplicatesOf(item, `${path}[${n}]`, out, depth + 1, max);
      });
    }
  };
  port.on("message", (m: { id: number; text: string; maxAliases: number; maxDepth: number }) => {
    let doc: ReturnType<typeof YAML.parseDocument>;
    try {
      doc = YAML.parseDocument(m.text, { version: "1.1", uniqueKeys: false, prettyErrors: false });
    } catch (err) {
      port.postMessage({ id: m.id, ok: false, stage: "parse", message: (err as Error).message });
      return;
    }
    if (doc.errors.length > 0) {
      port.postMessage({ id: m.id, ok: false, stage: "parse", message: doc.errors[0].message });
      return;
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(doc.toJS({ maxAliasCount: m.maxAliases }));
    } catch (err) {
      port.postMessage({ id: m.id, ok: false, stage: "convert", message: (err as Error).message });
      return;
    }
    const duplicates: string[] = [];
    duplicatesOf(doc.contents, "", duplicates, 0, m.maxDepth);
    port.postMessage({ id: m.id, ok: true, json, duplicates });
  });
}

const yamlThread = new JobThread<
  { text: string; maxAliases: number; maxDepth: number },
  YamlThreadResult
>("setpoint-yaml", yamlWorkerMain, createRequire(import.meta.url).resolve("yaml"));

/** Parses `text` (one YAML document) on the worker thread. */
export function parseYamlOffThread(
  text: string,
  maxAliases: number,
  maxDepth: number,
): Promise<YamlThreadResult> {
  return yamlThread.run({ text, maxAliases, maxDepth });
}
