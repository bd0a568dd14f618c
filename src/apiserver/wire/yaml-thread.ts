/**
 * Large YAML bodies parsed on a worker thread. The YAML parser costs some tens of
 * microseconds per value, all on the thread that runs it: a 1 MB body of 249,000
 * list items held the event loop for seconds, and every other client waited. On
 * the worker, that body takes as long, but only its own request waits.
 *
 * The worker is started on first use, runs one parse at a time (others queue),
 * and does not keep the process alive. Its code is one self-contained function
 * (it is sent to the thread as source), so it runs the same from the TypeScript
 * sources and from the bundled command.
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** What the worker answers: the document as JSON text and its duplicate keys, or why not. */
export type YamlThreadResult =
  | { ok: true; json: string | undefined; duplicates: string[] }
  | { ok: false; stage: "parse" | "convert"; message: string };

interface Job {
  resolve(r: YamlThreadResult): void;
  reject(err: Error): void;
}

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

let worker: Worker | undefined;
let nextId = 1;
const pending = new Map<number, Job>();

function failAll(err: Error): void {
  for (const job of pending.values()) job.reject(err);
  pending.clear();
  worker = undefined;
}

function thread(): Worker {
  if (worker) return worker;
  const yamlPath = createRequire(import.meta.url).resolve("yaml");
  // `__name` is the helper a compiler keeping function names may call in the source.
  const source = `var __name = (f) => f;\n(${yamlWorkerMain.toString()})(require("node:worker_threads").workerData);`;
  const w = new Worker(source, {
    eval: true,
    workerData: yamlPath,
    name: "setpoint-yaml",
  });
  w.unref();
  w.on("message", (m: YamlThreadResult & { id: number }) => {
    const job = pending.get(m.id);
    if (!job) return;
    pending.delete(m.id);
    if (pending.size === 0) w.unref();
    job.resolve(m);
  });
  w.on("error", (err) => failAll(err));
  w.on("exit", (code) => {
    if (worker === w) failAll(new Error(`the YAML thread exited with code ${code}`));
  });
  worker = w;
  return w;
}

/** Parses `text` (one YAML document) on the worker thread. */
export function parseYamlOffThread(
  text: string,
  maxAliases: number,
  maxDepth: number,
): Promise<YamlThreadResult> {
  const w = thread();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Kept alive while a parse is pending, so that its answer is awaited.
    w.ref();
    w.postMessage({ id, text, maxAliases, maxDepth });
  });
}
