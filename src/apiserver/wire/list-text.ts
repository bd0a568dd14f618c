/**
 * A list's body as text in pieces, for writing it a part at a time: its envelope
 * split where its elements go (the `items` of a list, the `rows` of a Table), and
 * its elements rendered a batch at a time, in JSON or YAML. The pieces joined are
 * the very text the whole list renders to (renderList, then serialize): the
 * elements' array is the envelope's last key, and an element's text does not
 * depend on the elements around it (JSON: joined with commas; YAML: entries of
 * a block sequence at the same indentation).
 */
import type { KubeObject, ListMeta } from "@setpoint/api";
import { stringify as toYaml } from "yaml";
import {
  listElements,
  listElementsJson,
  listEnvelopeJson,
  type Renderer,
  renderList,
} from "./render.ts";

/** A list's body in pieces (see the file's header). */
export interface ListText {
  /** Before the first element. */
  head: string;
  /** After the last element. */
  tail: string;
  /** Between two pieces of elements' text. */
  separator: string;
  /** The whole body when the list has no elements. */
  empty: string;
  /**
   * The text of the elements for `objects` (in order), in pieces joined by
   * `separator`: JSON one per element, YAML one for them all; none for no objects.
   */
  elements(objects: KubeObject[]): string[];
}

/**
 * About how many times longer YAML takes to render than JSON, byte for byte (the
 * yaml package's stringify against JSON.stringify, on ConfigMaps and Pods).
 */
export const YAML_RENDER_COST = 64;

/**
 * The bytes of objects to render at once for a chunk of `chunkBytes`: a chunk's
 * worth in JSON; in YAML less, so that a batch takes about as long to render and
 * other requests are not kept waiting behind it.
 */
export function listBatchBytes(r: Renderer, chunkBytes: number): number {
  return r.output.mediaType === "application/yaml"
    ? Math.max(1, Math.floor(chunkBytes / YAML_RENDER_COST))
    : chunkBytes;
}

/** Whether lists in this representation can be written in pieces (JSON and YAML; protobuf is whole). */
export function listTextMediaType(r: Renderer): boolean {
  return r.output.mediaType === "application/json" || r.output.mediaType === "application/yaml";
}

/** The JSON pieces of a list with `meta`. */
function jsonListText(r: Renderer, meta: ListMeta): ListText {
  const { head, tail } = listEnvelopeJson(r, meta);
  return {
    head,
    tail,
    separator: ",",
    empty: `${head}${tail}`,
    elements: (objects) => listElementsJson(r, objects),
  };
}

/**
 * The YAML pieces of a list with `meta`: the envelope with an empty array ends in
 * `<key>: []`; with elements, in `<key>:` and the sequence's entries, which are
 * rendered under the same key, one level deep, as in the whole document.
 */
function yamlListText(r: Renderer, meta: ListMeta): ListText {
  const envelope = renderList(r, [], meta) as Record<string, unknown>;
  const key = Object.keys(envelope).at(-1)!;
  const empty = toYaml(envelope);
  const emptyArray = " []\n";
  if (!empty.endsWith(`${key}:${emptyArray}`)) {
    throw new Error(`a ${key} list renders to YAML that does not end with its empty ${key}`);
  }
  const prefix = `${key}:\n`;
  return {
    head: `${empty.slice(0, -emptyArray.length)}\n`,
    tail: "",
    separator: "",
    empty,
    elements(objects) {
      if (objects.length === 0) return [];
      const text = toYaml({ [key]: listElements(r, objects) });
      if (!text.startsWith(prefix)) throw new Error(`${key} rendered to unexpected YAML`);
      return [text.slice(prefix.length)];
    },
  };
}

/** The pieces of a list with `meta` in the response's representation (see listTextMediaType). */
export function listText(r: Renderer, meta: ListMeta): ListText {
  return r.output.mediaType === "application/yaml" ? yamlListText(r, meta) : jsonListText(r, meta);
}
