/**
 * JSON body decoding benchmark: `node --import tsx bench/decode.ts`.
 *
 * The duplicate-key scan (findDuplicateJsonKeys, run on every JSON body whose
 * quoted strings JSON.parse did not all turn into distinct values) on typical
 * bodies, beside the baseline JSON.parse of the same text, in one process:
 *
 * - configmap: a ConfigMap with 20 data keys;
 * - custom: a nested custom resource (spec with lists of objects);
 * - escaped: the same custom resource with escapes in its strings and keys;
 * - wide: one object of 100 keys (past the pairwise comparisons, a set is used).
 *
 * Environment:
 *   BENCH_DECODE_MS   time per measurement in ms (default 1000)
 */
import { findDuplicateJsonKeys } from "../src/apiserver/wire/index.ts";
import { printTable, type Row } from "./lib/table.ts";
import { loopFor } from "./lib/timing.ts";

const MS = Number(process.env.BENCH_DECODE_MS ?? 1000);

function configMap(): object {
  const data: Record<string, string> = {};
  for (let i = 0; i < 20; i++) data[`key-${i}`] = `value number ${i} of the config map`;
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "settings", namespace: "default", labels: { app: "web", tier: "front" } },
    data,
  };
}

function custom(escaped: boolean): object {
  const q = escaped ? '"quoted" \\ path\n' : "plain text";
  return {
    apiVersion: "example.com/v1",
    kind: "WebApp",
    metadata: {
      name: "shop",
      namespace: "default",
      annotations: { [escaped ? 'note"s' : "notes"]: q },
    },
    spec: {
      replicas: 3,
      image: "registry.example.com/shop:1.2.3",
      env: Array.from({ length: 10 }, (_, i) => ({ name: `VAR_${i}`, value: `${q}${i}` })),
      ports: [
        { name: "http", containerPort: 8080, protocol: "TCP" },
        { name: "metrics", containerPort: 9090, protocol: "TCP" },
      ],
      resources: { limits: { cpu: "500m", memory: "256Mi" }, requests: { cpu: "100m" } },
    },
  };
}

function wide(): object {
  const o: Record<string, number> = {};
  for (let i = 0; i < 100; i++) o[`field${i}`] = i;
  return { metadata: { name: "wide" }, spec: o };
}

const bodies: [string, string][] = [
  ["configmap", JSON.stringify(configMap())],
  ["custom", JSON.stringify(custom(false))],
  ["escaped", JSON.stringify(custom(true))],
  ["wide", JSON.stringify(wide())],
];

const rows: Row[] = [];
let sink = 0;
for (const [name, text] of bodies) {
  // Warm both up before measuring.
  loopFor(MS / 4, () => {
    sink += findDuplicateJsonKeys(text).length;
    sink += JSON.parse(text) ? 1 : 0;
  });
  const baseline = loopFor(MS, () => {
    sink += JSON.parse(text) ? 1 : 0;
  });
  const scan = loopFor(MS, () => {
    sink += findDuplicateJsonKeys(text).length;
  });
  rows.push({
    backend: `${name} (${text.length} chars)`,
    metric: "duplicate-key scans",
    value: scan.perSecond,
    unit: "/s",
    baseline: baseline.perSecond,
    baselineLabel: "JSON.parse",
    better: "higher",
  });
}
printTable("Duplicate-key scan of JSON bodies (higher is better)", rows);
if (sink < 0) console.log(sink);
