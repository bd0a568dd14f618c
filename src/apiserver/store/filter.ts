/** Which objects a list or watch selects: namespace, label selector and field selector. */

import type { KubeObject } from "@setpoint/api";
import {
  type FieldSelector,
  type LabelSelector,
  matchesFields,
  matchesLabels,
} from "@setpoint/api";
import { fieldValues } from "../../registry/field-selectors.ts";
import type { ResourceDefinition } from "../../registry/types.ts";
import { type CacheEntry, entryField } from "../watchcache/watch-cache.ts";

export interface ObjectFilter {
  /** Only objects of this namespace (absent: every namespace). */
  namespace?: string;
  labels: LabelSelector;
  fields: FieldSelector;
}

/** Whether a cache entry is selected. */
export function entryMatches(f: ObjectFilter, e: CacheEntry): boolean {
  if (f.namespace !== undefined && e.namespace !== f.namespace) return false;
  if (!matchesLabels(f.labels, e.labels)) return false;
  if (f.fields.requirements.length === 0) return true;
  return matchesFields(f.fields, (name) => entryField(e, name));
}

/** Whether an object is selected. */
export function objectMatches(f: ObjectFilter, def: ResourceDefinition, obj: KubeObject): boolean {
  if (f.namespace !== undefined && (obj.metadata.namespace ?? "") !== f.namespace) return false;
  if (!matchesLabels(f.labels, obj.metadata.labels)) return false;
  if (f.fields.requirements.length === 0) return true;
  const values = fieldValues(def, obj);
  return matchesFields(f.fields, (name) => values[name]);
}
