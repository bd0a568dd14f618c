import { type KubeObject, StatusError } from "@setpoint/api";
import {
  applyServerSide,
  extractFields,
  FieldSet,
  parsePathElement,
  UNTRACKED_FIELDS,
} from "@setpoint/api/managedfields";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { API_VERSION, at, config, Server, schema, spec } from "./managedfields-helpers.ts";

const small = fc.integer({ min: 0, max: 2 });

/** Random specs of the test kind, touching every list and map kind of its schema. */
const specArb = fc.record(
  {
    replicas: small,
    paused: fc.boolean(),
    args: fc.array(fc.constantFrom("p", "q"), { maxLength: 3 }),
    selector: fc.record({
      matchLabels: fc.dictionary(fc.constantFrom("x", "y"), fc.constantFrom("1", "2")),
    }),
    hosts: fc.uniqueArray(fc.constantFrom("h1", "h2", "h3", "h4"), { maxLength: 3 }),
    ports: fc.uniqueArray(
      fc.record(
        {
          port: fc.constantFrom(80, 443),
          protocol: fc.constantFrom("TCP", "UDP"),
          name: fc.constantFrom("n1", "n2"),
        },
        { requiredKeys: ["port", "protocol"] },
      ),
      { selector: (p) => `${p.port}/${p.protocol}`, maxLength: 3 },
    ),
    containers: fc.uniqueArray(
      fc.record(
        {
          name: fc.constantFrom("a", "b", "c"),
          image: fc.constantFrom("i1", "i2"),
          env: fc.uniqueArray(
            fc.record(
              { name: fc.constantFrom("E", "F"), value: fc.constantFrom("1", "2") },
              { requiredKeys: ["name"] },
            ),
            { selector: (e) => e.name, maxLength: 2 },
          ),
        },
        { requiredKeys: ["name"] },
      ),
      { selector: (c) => c.name, maxLength: 3 },
    ),
    resources: fc.dictionary(
      fc.constantFrom("r1", "r2"),
      fc.record(
        { cpu: fc.constantFrom("1", "2"), memory: fc.constantFrom("1Gi") },
        { requiredKeys: [] },
      ),
      { maxKeys: 2 },
    ),
    config: fc.dictionary(
      fc.constantFrom("k1", "k2"),
      fc.oneof(small, fc.dictionary(fc.constantFrom("x", "y"), small, { maxKeys: 2 })),
      { maxKeys: 2 },
    ),
  },
  { requiredKeys: [] },
);

const labelsArb = fc.option(
  fc.dictionary(fc.constantFrom("l1", "l2"), fc.constantFrom("v1", "v2")),
  { nil: undefined },
);

const cfgArb = fc
  .record({ spec: specArb, labels: labelsArb })
  .map(({ spec, labels }) => config({ spec }, labels ? { labels } : {}));

const MISSING = Symbol("missing");

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The value at a field path, or MISSING. */
function valueAt(obj: unknown, path: string[]): unknown {
  let cur: unknown = obj;
  for (const k of path) {
    const pe = parsePathElement(k);
    if (pe?.kind === "field") {
      if (!isObj(cur) || !Object.hasOwn(cur, pe.name)) return MISSING;
      cur = cur[pe.name];
    } else if (pe?.kind === "key" || pe?.kind === "value") {
      if (!Array.isArray(cur)) return MISSING;
      const found = cur.find((item) =>
        pe.kind === "value"
          ? JSON.stringify(item) === JSON.stringify(pe.value)
          : isObj(item) &&
            pe.fields.every(([n, v]) => JSON.stringify(item[n]) === JSON.stringify(v)),
      );
      if (found === undefined) return MISSING;
      cur = found;
    } else {
      return MISSING;
    }
  }
  return cur;
}

/**
 * True if the value at `path` is one field whose whole value its owner decides: a
 * scalar, an atomic list or map. (An empty granular map is owned too, but others may
 * add fields to it.)
 */
function isLeaf(v: unknown, path: string[]): boolean {
  return !isObj(v) || path[path.length - 1] === "f:selector";
}

function owned(s: Server, manager: string): FieldSet {
  return FieldSet.fromFieldsV1(s.entry(manager, "Apply")?.fieldsV1 ?? {});
}

const managers = ["m1", "m2", "m3"];

describe("server-side apply properties", () => {
  it("applying the same configuration twice is a no-op", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ m: fc.constantFrom(...managers), c: cfgArb }), { maxLength: 4 }),
        fc.constantFrom(...managers),
        cfgArb,
        (history, m, c) => {
          const s = new Server();
          for (const h of history) s.apply(h.c, h.m, { force: true });
          const first = s.apply(c, m, { force: true });
          // An object nobody owns anything of (say, a configuration of only empty lists)
          // carries no managedFields; like any such object, its next apply first hands
          // its fields to before-first-apply. Not a repeat of the same state, so skipped.
          fc.pre(first.metadata.managedFields !== undefined);
          const again = applyServerSide(first, c, schema, {
            manager: m,
            apiVersion: API_VERSION,
            time: at(1000),
            force: false,
          });
          expect(again).toEqual(first);
        },
      ),
    );
  });

  it("a sole applier owns exactly what it created, and applying an empty configuration removes it all", () => {
    fc.assert(
      fc.property(cfgArb, (c) => {
        const s = new Server();
        const created = s.apply(c, "m");
        const mine = owned(s, "m");
        expect(extractFields(created, schema).difference(UNTRACKED_FIELDS).equals(mine)).toBe(true);
        const out = s.apply(config(), "m");
        expect(extractFields(out, schema).intersection(mine).empty).toBe(true);
        expect(out.metadata.managedFields).toBeUndefined();
        expect(out.metadata.labels).toBeUndefined();
      }),
    );
  });

  it("owners of a field agree on its value, which is the object's; sets stay within each configuration", () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant("apply" as const),
        m: fc.constantFrom(...managers),
        c: cfgArb,
        force: fc.boolean(),
      }),
      fc.record({ kind: fc.constant("update" as const), replicas: small }),
    );
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
        const s = new Server();
        const lastConfig = new Map<string, KubeObject>();
        for (const st of steps) {
          if (st.kind === "update") {
            if (s.obj)
              s.update("hpa", (o) => ({ ...o!, spec: { ...spec(o), replicas: st.replicas } }));
            continue;
          }
          try {
            s.apply(st.c, st.m, { force: st.force });
            lastConfig.set(st.m, st.c);
          } catch (e) {
            if (!(e instanceof StatusError) || e.code !== 409 || st.force) throw e;
          }
          for (const [m, cfg] of lastConfig) {
            const set = owned(s, m);
            expect(set.difference(extractFields(cfg, schema)).empty).toBe(true);
            for (const p of set.paths()) {
              const want = valueAt(cfg, p);
              if (isLeaf(want, p)) expect(valueAt(s.obj, p)).toEqual(want);
            }
            for (const [other, otherCfg] of lastConfig) {
              if (other === m) continue;
              for (const p of set.intersection(owned(s, other)).paths()) {
                const a = valueAt(cfg, p);
                if (isLeaf(a, p)) expect(valueAt(otherCfg, p)).toEqual(a);
              }
            }
          }
          for (const list of ["ports", "containers"]) {
            const items = (spec(s.obj)?.[list] ?? []) as Record<string, unknown>[];
            const keys = items.map((i) => JSON.stringify([i.name, i.port, i.protocol]));
            expect(new Set(keys).size).toBe(keys.length);
          }
        }
      }),
    );
  });
});
