/**
 * Watching every kind for a while, to count writes per object (hot loops): one
 * watch per resource, from the resourceVersion of its list, so nothing written
 * after the list is missed; every watch is closed when the window ends.
 */
import type { KubeObject } from "@setpoint/api";
import type { Client } from "@setpoint/runtime";
import { groupResource, type ServedResource } from "@setpoint/runtime";
import type { ClusterListing } from "./cluster.ts";
import { WriteSampler } from "./hot-loop.ts";

/** What a sample window saw. */
export interface WriteSample {
  sampler: WriteSampler;
  /** How long the watches ran, in ms. */
  windowMs: number;
  /** Resources whose watch failed, with why. */
  failures: { resource: string; message: string }[];
}

/**
 * Watches each listed resource accepted by `include` for `windowMs`, feeding
 * the listed objects as baselines and every event to a WriteSampler.
 * `metadataOnly(r)` says which resources to watch as metadata only.
 */
export async function sampleWrites(
  client: Client,
  listing: ClusterListing,
  include: (r: ServedResource) => boolean,
  metadataOnly: (r: ServedResource) => boolean,
  windowMs: number,
): Promise<WriteSample> {
  const sampler = new WriteSampler();
  const failures: WriteSample["failures"] = [];
  for (const { resource, obj } of listing.items) {
    if (include(resource)) sampler.baseline(resource, obj);
  }
  const started = Date.now();
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), windowMs);
  const runs = listing.listed
    .filter(({ resource }) => include(resource))
    .map(async ({ resource, resourceVersion }) => {
      const stream = client.watch<KubeObject>(
        { apiVersion: resource.apiVersion, kind: resource.kind },
        {
          resourceVersion,
          metadataOnly: metadataOnly(resource),
          timeoutSeconds: Math.ceil(windowMs / 1000) + 1,
          signal: stop.signal,
        },
      );
      const close = () => stream.close();
      stop.signal.addEventListener("abort", close, { once: true });
      try {
        for await (const ev of stream) {
          if (ev.type === "ERROR") {
            failures.push({
              resource: groupResource(resource),
              message: ev.object.message ?? "watch error",
            });
            break;
          }
          sampler.observe(resource, ev.type, ev.object);
        }
      } catch (e) {
        if (!stop.signal.aborted) {
          failures.push({
            resource: groupResource(resource),
            message: e instanceof Error ? e.message : String(e),
          });
        }
      } finally {
        stop.signal.removeEventListener("abort", close);
      }
    });
  await Promise.all(runs);
  clearTimeout(timer);
  stop.abort();
  return { sampler, windowMs: Math.max(Date.now() - started, 1), failures };
}
