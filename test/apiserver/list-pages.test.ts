/**
 * Pages of a list read from storage in storage pages of any size: the objects,
 * the continue token, the remaining count and the revision are those of one
 * storage read of the whole page, and a visitor is handed exactly those objects.
 * A real SQLite file and the resource store, no HTTP; property-tested over page
 * limits, storage page sizes, selectors and starting tokens.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVERYTHING_FIELDS } from "../../packages/api/src/fields.ts";
import { parseLabelSelector } from "../../packages/api/src/labels.ts";
import type { KubeObject } from "../../packages/api/src/meta.ts";
import { DEFAULT_API_LIMITS } from "../../src/apiserver/endpoints/limits.ts";
import {
  type ListRequest,
  type ObjectFilter,
  ResourceStore,
  type StoreServices,
} from "../../src/apiserver/store/index.ts";
import type { Registry } from "../../src/registry/registry.ts";
import { storageVersion } from "../../src/registry/types.ts";
import { openStoreServices, type StoreRig } from "../helpers/store-services.ts";

const user = { name: "tester", groups: ["system:masters"] };
const OBJECTS = 150;
const NS = "p";

let rig: StoreRig;
let registry: Registry;
let base: StoreServices;

beforeAll(async () => {
  rig = await openStoreServices("list-pages");
  ({ registry, services: base } = rig);
  await resource(1000, "namespaces").create(
    { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
    { dryRun: false, manager: "test" },
  );
  const cms = resource(1000, "configmaps", NS);
  for (let i = 0; i < OBJECTS; i++) {
    await cms.create(
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: `cm-${String(i).padStart(3, "0")}`,
          namespace: NS,
          labels: { g: "abc"[i % 3] },
        },
        data: { i: String(i) },
      } as KubeObject,
      { dryRun: false, manager: "test" },
    );
  }
}, 60_000);

afterAll(async () => {
  await rig?.close();
});

/** The resource store of `plural`, reading storage `storagePageSize` items at a time. */
function resource(storagePageSize: number, plural: string, namespace?: string): ResourceStore {
  const definition = registry.get("", plural)!;
  return new ResourceStore(
    { ...base, limits: { ...DEFAULT_API_LIMITS, storagePageSize } },
    {
      definition,
      version: storageVersion(definition),
      user,
      ...(namespace !== undefined ? { namespace } : {}),
    },
  );
}

function filterOf(selector: string): ObjectFilter {
  return { namespace: NS, labels: parseLabelSelector(selector), fields: EVERYTHING_FIELDS };
}

const names = (items: KubeObject[]) => items.map((o) => o.metadata.name);

describe("pages of a list read in storage pages of any size", () => {
  it("end where one read ends, with the same token, remaining count and revision", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: OBJECTS + 10 }),
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom("", "g=a", "g!=b"),
        fc.boolean(),
        fc.integer({ min: 0, max: OBJECTS - 1 }),
        async (limit, pageSize, selector, rawWanted, startAfter) => {
          const whole = resource(1_000_000, "configmaps", NS);
          const paged = resource(pageSize, "configmaps", NS);
          const filter = filterOf(selector);
          const raw = rawWanted && selector === "";
          // Start at the beginning, or after a first page read whole.
          let token: string | undefined;
          if (startAfter > 0) {
            const first = await whole.list(
              { filtered: selector !== "", resourceVersion: "", limit: startAfter },
              filter,
            );
            token = first.continue;
          }
          if (limit === 0 && token === undefined) limit = 1;
          const req: ListRequest = {
            filtered: selector !== "",
            resourceVersion: "",
            limit,
            ...(token ? { continue: token } : {}),
          };
          const expected = await whole.list(req, filter, raw);
          const got = await paged.list(req, filter, raw);
          expect(names(got.items)).toEqual(names(expected.items));
          expect(got.json).toEqual(expected.json);
          expect(got.continue).toBe(expected.continue);
          expect(got.remainingItemCount).toBe(expected.remainingItemCount);
          expect(got.revision).toBe(expected.revision);
          // Handed to a visitor a storage page at a time: the same objects, nothing kept.
          const visited: KubeObject[] = [];
          const visitedJson: string[] = [];
          const seen = await paged.list(req, filter, raw, true, (items, json) => {
            visited.push(...items);
            visitedJson.push(...json);
          });
          expect(names(visited)).toEqual(names(expected.items));
          expect(visitedJson).toEqual(expected.json ?? []);
          expect(seen.items).toEqual([]);
          expect(seen.continue).toBe(expected.continue);
          expect(seen.remainingItemCount).toBe(expected.remainingItemCount);
        },
      ),
      { numRuns: 80 },
    );
  });
});
