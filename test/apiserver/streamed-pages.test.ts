/**
 * Streamed paginated lists, YAML lists, protobuf lists and initial events read
 * from storage: the bytes are those of the whole rendering, and a large response
 * is written a chunk at a time with backpressure. The reference for "the whole rendering" is a second
 * apiserver on the same storage whose limits make every list whole (one storage
 * read per page, no chunk limit), and for YAML also the YAML serializer applied to
 * the JSON list. Small limits make a thousand objects "large"; assertions are on
 * the bytes, the HTTP chunks and the server's own accounting, never on time.
 */
import http from "node:http";
import net from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  decodeProtobufObject,
  decodeProtobufResponse,
  encodeProtobufObject,
} from "../../src/apiserver/wire/index.ts";
import { protobufRoot } from "../../src/apiserver/wire/protobuf/messages.ts";
import { serialize } from "../../src/apiserver/wire/response.ts";
import { configMap, eventually, type Harness, startHarness } from "./harness.ts";

const CHUNK = 16 * 1024;
const BUDGET = 64 * 1024;
const OBJECTS = 1200;
/** Each ConfigMap's data value: its JSON is about 2 KiB, a chunk holds about 8. */
const VALUE = "v".repeat(1800);
const NS = "pages";
const P = `/api/v1/namespaces/${NS}/configmaps`;
const JSON_TYPE = "application/json";
const YAML = "application/yaml";
const TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io";
const PARTIAL = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
const PB = "application/vnd.kubernetes.protobuf";
const PB_PARTIAL = `${PB};as=PartialObjectMetadataList;v=v1;g=meta.k8s.io`;

/** Creates `n` ConfigMaps over HTTP, a few at a time; every other one labelled half=yes. */
async function fill(h: Harness, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < n; i = next++) {
        const labels = i % 2 === 0 ? { half: "yes" } : { half: "no" };
        const r = await h.post(
          P,
          configMap(`cm-${String(i).padStart(5, "0")}`, { v: VALUE, n: String(i) }, { labels }),
        );
        if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
      }
    }),
  );
}

/** The most the budget may show: its capacity, plus one item's overshoot per stream. */
function bound(streams: number): number {
  return BUDGET + streams * 4096;
}

/**
 * A Table's text with its Age cells (the time since each object was made, at the
 * moment its row was rendered) made alike: two renderings a second apart differ
 * there and nowhere else. Other text is unchanged.
 */
function ageless(text: string): string {
  return text.replace(/"(\d+[smhdy])+"/g, '"AGE"').replace(/^( +- )(\d+[smhdy])+$/gm, "$1AGE");
}

/** A response read off the socket: its HTTP/1.1 chunks as the server framed them. */
interface RawReply {
  status: number;
  headers: Record<string, string>;
  /** The body's chunks (one for a body with a Content-Length). */
  chunks: Buffer[];
  body: Buffer;
}

/**
 * GETs `path` over a socket of its own and reads the response's framing: the
 * chunks of a chunked body, until the last one (or until `enough` says the
 * body so far suffices: then the connection is closed).
 */
function rawGet(
  connect: () => net.Socket,
  path: string,
  accept: string,
  enough?: (body: Buffer) => boolean,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect();
    let buf = Buffer.alloc(0);
    let head: { status: number; headers: Record<string, string> } | undefined;
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ ...head!, chunks, body: Buffer.concat(chunks) });
    };
    const parse = () => {
      if (!head) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(":");
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        head = { status: Number(lines[0].split(" ")[1]), headers };
        buf = buf.subarray(end + 4);
      }
      if (head.headers["transfer-encoding"] !== "chunked") {
        const length = Number(head.headers["content-length"]);
        if (buf.length >= length) {
          chunks.push(buf.subarray(0, length));
          finish();
        }
        return;
      }
      for (;;) {
        const eol = buf.indexOf("\r\n");
        if (eol < 0) return;
        const size = Number.parseInt(buf.subarray(0, eol).toString("latin1"), 16);
        if (size === 0) {
          finish();
          return;
        }
        if (buf.length < eol + 2 + size + 2) return;
        chunks.push(buf.subarray(eol + 2, eol + 2 + size));
        buf = buf.subarray(eol + 2 + size + 2);
        if (enough?.(Buffer.concat(chunks))) {
          finish();
          return;
        }
      }
    };
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      parse();
    });
    socket.on("error", reject);
    socket.on("close", () => {
      if (!done) reject(new Error(`the connection closed before the response ended (${path})`));
    });
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: setpoint\r\nAccept: ${accept}\r\nConnection: close\r\n\r\n`,
    );
  });
}

describe("streamed pages, YAML lists and initial events from storage", () => {
  let h: Harness;
  /** A second apiserver on the same storage that writes every list whole. */
  let whole: Harness;
  let unix: http.Server;
  let socketPath: string;
  const clients: net.Socket[] = [];
  let unixRequests = 0;
  let port: number;
  /** The revision after the objects were made. */
  let R: string;

  beforeAll(async () => {
    h = await startHarness({
      limits: {
        streamChunkBytes: CHUNK,
        streamBudgetBytes: BUDGET,
        streamStallMs: 3000,
        // Pages of a list are read from storage in several reads.
        storagePageSize: 100,
        watchDrainMs: 200,
        slowWatcherBytes: 256 * 1024,
      },
    });
    whole = await startHarness({
      store: h.store,
      limits: { streamChunkBytes: 1 << 30, storagePageSize: 1_000_000 },
    });
    await h.namespace(NS);
    await h.namespace("empty");
    await fill(h, OBJECTS);
    R = (await h.get(`${P}?limit=1`)).body.metadata.resourceVersion;
    port = Number(new URL(h.url).port);
    socketPath = join(h.dir, "api.sock");
    unix = http.createServer((req, res) => {
      unixRequests++;
      void h.handler.handle(req, res, { name: "admin", groups: ["system:masters"] });
    });
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.destroy();
    unix?.closeAllConnections();
    await new Promise<void>((resolve) => (unix ? unix.close(() => resolve()) : resolve()));
    await whole?.close();
    await h?.close();
  });

  /**
   * Sends each request on a connection of its own that then reads nothing, and
   * waits until the server has them all.
   */
  async function sendUnread(requests: { path: string; accept?: string }[]): Promise<void> {
    const before = unixRequests;
    for (const { path, accept } of requests) {
      const c = net.connect(socketPath);
      c.on("error", () => {});
      clients.push(c);
      c.pause();
      const headers = accept ? `Accept: ${accept}\r\n` : "";
      c.write(`GET ${path} HTTP/1.1\r\nHost: setpoint\r\n${headers}\r\n`);
    }
    await eventually(() => unixRequests === before + requests.length, 10_000);
  }

  /** Reads the output budget's stats, keeping the most bytes in flight seen (`highest()`). */
  function budgetSampler() {
    let highest = 0;
    return {
      sample: () => {
        const stats = h.handler.outputStats();
        highest = Math.max(highest, stats.inFlight);
        return stats;
      },
      highest: () => highest,
    };
  }

  const tcp = () => net.connect(port, "127.0.0.1");
  const wholeTcp = () => net.connect(Number(new URL(whole.url).port), "127.0.0.1");

  /** GETs `path` from both servers: the same status and bytes; whether the first streamed it. */
  async function same(path: string, accept: string): Promise<{ text: string; streamed: boolean }> {
    const [a, b] = await Promise.all([h.get(path, { accept }), whole.get(path, { accept })]);
    expect(b.status, `${path} (${accept}): ${b.text.slice(0, 300)}`).toBe(200);
    expect(a.status).toBe(200);
    expect(b.headers["content-length"]).toBeDefined();
    expect(ageless(a.text), `${path} (${accept})`).toBe(ageless(b.text));
    expect(a.headers["content-type"]).toBe(b.headers["content-type"]);
    return { text: a.text, streamed: a.headers["content-length"] === undefined };
  }

  it("sends the pages of a paginated list byte for byte as a whole read, streamed when larger than a chunk", async () => {
    const paths = [
      `${P}?limit=1000`,
      `${P}?limit=100000`,
      `${P}?limit=1000&resourceVersion=${R}`,
      `${P}?limit=1000&resourceVersion=${R}&resourceVersionMatch=NotOlderThan`,
      `${P}?limit=450&labelSelector=half%3Dyes`,
      `${P}?limit=1000&labelSelector=half%3Dyes`,
      `${P}?limit=30&fieldSelector=metadata.name%21%3Dcm-00003`,
    ];
    for (const path of paths) {
      const { text, streamed } = await same(path, JSON_TYPE);
      expect(streamed, path).toBe(true);
      const body = JSON.parse(text);
      if (path.includes("limit=1000&") && !path.includes("Selector")) {
        expect(body.items).toHaveLength(1000);
        expect(body.metadata.continue).toBeDefined();
        expect(body.metadata.remainingItemCount).toBe(OBJECTS - 1000);
      }
      if (path.includes("limit=450&labelSelector")) {
        expect(body.items).toHaveLength(450);
        expect(body.metadata.continue).toBeDefined();
        expect(body.metadata.remainingItemCount).toBeUndefined();
      }
      if (path.includes("limit=100000")) {
        expect(body.items).toHaveLength(OBJECTS);
        expect(body.metadata.continue).toBeUndefined();
      }
    }
    // A page within a chunk is sent whole, with its Content-Length, as before.
    expect((await same(`${P}?limit=3`, JSON_TYPE)).streamed).toBe(false);
    // Other representations of the same pages.
    for (const accept of [YAML, TABLE, PARTIAL, "application/yaml;as=Table;v=v1;g=meta.k8s.io"]) {
      expect((await same(`${P}?limit=1000&resourceVersion=${R}`, accept)).streamed).toBe(true);
      expect((await same(`${P}?limit=450&labelSelector=half%3Dyes`, accept)).streamed).toBe(true);
    }
  });

  it("continues a paginated list with the same tokens and pages as a whole read", async () => {
    for (const selector of ["", "&labelSelector=half%3Dno"]) {
      const names: string[] = [];
      let token = "";
      let pages = 0;
      do {
        const path = `${P}?limit=350${selector}${token ? `&continue=${token}` : ""}`;
        const { text } = await same(path, JSON_TYPE);
        const body = JSON.parse(text);
        names.push(...body.items.map((o: { metadata: { name: string } }) => o.metadata.name));
        token = body.metadata.continue ?? "";
        pages++;
      } while (token);
      const expected = selector ? OBJECTS / 2 : OBJECTS;
      expect(names).toHaveLength(expected);
      expect(new Set(names).size).toBe(expected);
      expect(pages).toBe(Math.ceil(expected / 350));
    }
    // The rest of a list after a token, with no limit.
    const first = (await h.get(`${P}?limit=200`)).body.metadata.continue;
    const { text, streamed } = await same(`${P}?continue=${first}`, YAML);
    expect(streamed).toBe(true);
    expect(text.match(/^ {2}- /gm)).toHaveLength(OBJECTS - 200);
  });

  it("writes a large page in chunks of about the chunk size", async () => {
    const reference = await whole.get(`${P}?limit=1000`, { accept: YAML });
    for (const accept of [JSON_TYPE, YAML]) {
      const r = await rawGet(tcp, `${P}?limit=1000`, accept);
      expect(r.status).toBe(200);
      expect(r.headers["transfer-encoding"]).toBe("chunked");
      expect(r.headers["content-length"]).toBeUndefined();
      if (accept === YAML) expect(r.body.toString("utf8")).toBe(reference.text);
      // About 2 MiB in chunks of about 16 KiB.
      expect(r.chunks.length).toBeGreaterThan(60);
      expect(Math.max(...r.chunks.map((c) => c.length))).toBeLessThanOrEqual(2 * CHUNK + 4096);
    }
  });

  it("renders YAML lists item by item exactly as the whole list, empty ones included", async () => {
    const cases = [
      `${P}?resourceVersion=0`,
      `${P}?resourceVersion=0&labelSelector=half%3Dyes`,
      `${P}?resourceVersion=${R}&resourceVersionMatch=Exact`,
      `${P}?resourceVersion=${R}&resourceVersionMatch=Exact&labelSelector=half%3Dno`,
      `${P}?limit=700&resourceVersion=${R}`,
      // Selecting nothing: from the cache, and from storage across many storage pages.
      `${P}?resourceVersion=0&labelSelector=half%3Dmaybe`,
      `${P}?resourceVersion=${R}&resourceVersionMatch=Exact&labelSelector=half%3Dmaybe`,
      `${P}?limit=5&resourceVersion=${R}&labelSelector=half%3Dmaybe`,
      "/api/v1/namespaces/empty/configmaps",
      "/api/v1/namespaces/empty/configmaps?resourceVersion=0",
    ];
    for (const path of cases) {
      const json = await h.get(path);
      expect(json.status).toBe(200);
      const yaml = await h.get(path, { accept: YAML });
      expect(yaml.status).toBe(200);
      expect(yaml.headers["content-type"]).toBe(YAML);
      // What the whole list renders to: the YAML serializer on the same list.
      expect(yaml.text, path).toBe(serialize(JSON.parse(json.text), YAML));
      if (json.body.items.length === 0) expect(yaml.text).toMatch(/\nitems: \[\]\n$/);
      else expect(yaml.headers["content-length"], path).toBeUndefined();
    }
    // A filtered list from storage that matched nothing, streamed: still `items: []`.
    const none = await rawGet(
      tcp,
      `${P}?resourceVersion=${R}&resourceVersionMatch=Exact&labelSelector=half%3Dmaybe`,
      YAML,
    );
    expect(none.body.toString("utf8")).toMatch(/\nitems: \[\]\n$/);
    // Tables in YAML, from the cache and from storage.
    for (const path of [`${P}?resourceVersion=0`, P]) {
      const accept = "application/yaml;as=Table;v=v1;g=meta.k8s.io";
      const json = await h.get(path, { accept: TABLE });
      const yaml = await h.get(path, { accept });
      expect(yaml.headers["content-length"]).toBeUndefined();
      expect(ageless(yaml.text)).toBe(ageless(serialize(JSON.parse(json.text), YAML) as string));
    }
  });

  it("sends protobuf lists byte for byte as the whole encoding, streamed when larger than a chunk", async () => {
    const ConfigMapList = protobufRoot().lookupType("k8s.io.api.core.v1.ConfigMapList");
    const Unknown = protobufRoot().lookupType("k8s.io.apimachinery.pkg.runtime.Unknown");
    const cases: [string, number, boolean][] = [
      // From the watch cache.
      [`${P}?resourceVersion=0`, OBJECTS, true],
      [`${P}?resourceVersion=0&labelSelector=half%3Dyes`, OBJECTS / 2, true],
      [`${P}?resourceVersion=0&labelSelector=half%3Dmaybe`, 0, false],
      // From storage, unpaginated.
      [P, OBJECTS, true],
      [`${P}?resourceVersion=${R}&resourceVersionMatch=Exact`, OBJECTS, true],
      [`${P}?resourceVersion=${R}`, OBJECTS, true],
      [`${P}?labelSelector=half%3Dno`, OBJECTS / 2, true],
      [`${P}?fieldSelector=metadata.name%21%3Dcm-00003`, OBJECTS - 1, true],
      [`${P}?labelSelector=half%3Dmaybe`, 0, false],
      ["/api/v1/namespaces/empty/configmaps", 0, false],
      // Paginated.
      [`${P}?limit=1000`, 1000, true],
      [`${P}?limit=100000`, OBJECTS, true],
      [`${P}?limit=1000&resourceVersion=${R}`, 1000, true],
      [`${P}?limit=450&labelSelector=half%3Dyes`, 450, true],
      [`${P}?limit=30&fieldSelector=metadata.name%21%3Dcm-00003`, 30, true],
      [`${P}?limit=3`, 3, false],
      [`${P}?limit=5&labelSelector=half%3Dmaybe`, 0, false],
    ];
    const first = (await h.get(`${P}?limit=200`)).body.metadata.continue;
    cases.push([`${P}?continue=${first}`, OBJECTS - 200, true]);
    cases.push([`${P}?limit=600&continue=${first}`, 600, true]);
    for (const [path, count, streamed] of cases) {
      for (const [accept, jsonAccept] of [
        [PB, JSON_TYPE],
        [PB_PARTIAL, PARTIAL],
      ]) {
        const [a, b] = await Promise.all([
          rawGet(tcp, path, accept),
          rawGet(wholeTcp, path, accept),
        ]);
        const json = await h.get(path, { accept: jsonAccept });
        expect(a.status, path).toBe(200);
        expect(b.status, path).toBe(200);
        expect(a.headers["content-type"]).toBe(b.headers["content-type"]);
        expect(a.headers["content-type"]?.startsWith(PB)).toBe(true);
        expect(b.headers["content-length"]).toBeDefined();
        // The same bytes as the other server's, and as the whole list's encoding.
        expect(a.body.equals(b.body), `${path} (${accept})`).toBe(true);
        const reference = encodeProtobufObject(json.body)!;
        expect(a.body.equals(reference), `${path} (${accept}) against JSON`).toBe(true);
        // Streamed when larger than a chunk: in chunks of about a chunk.
        const large = a.body.length > CHUNK + 1024;
        if (accept === PB) expect(large, path).toBe(streamed);
        if (large) {
          expect(a.headers["transfer-encoding"], path).toBe("chunked");
          expect(a.headers["content-length"]).toBeUndefined();
          expect(a.chunks.length, path).toBeGreaterThan(a.body.length / (2 * CHUNK));
          expect(Math.max(...a.chunks.map((c) => c.length))).toBeLessThanOrEqual(2 * CHUNK + 4096);
        } else if (a.body.length <= CHUNK) {
          expect(a.headers["content-length"], path).toBe(String(a.body.length));
        }
        // What a client decodes: the items of the JSON list.
        const decoded = decodeProtobufResponse(a.body);
        const items = (decoded.items as { metadata: { name: string } }[] | undefined) ?? [];
        expect(items).toHaveLength(count);
        expect(items.map((o) => o.metadata.name)).toEqual(
          json.body.items.map((o: { metadata: { name: string } }) => o.metadata.name),
        );
        expect(decoded.metadata).toEqual(json.body.metadata);
        if (accept === PB && count > 0) {
          // And as the message of Kubernetes' ConfigMapList, read with the .proto alone.
          const env = Unknown.decode(a.body.subarray(4)) as unknown as { raw: Uint8Array };
          const list = ConfigMapList.toObject(ConfigMapList.decode(env.raw)) as {
            items: { metadata: { name: string }; data: Record<string, string> }[];
          };
          expect(list.items).toHaveLength(count);
          expect(list.items[count - 1].data).toEqual(json.body.items[count - 1].data);
        }
      }
    }
  });

  it("keeps clients that do not read a large protobuf list within the budget, and cuts them off", async () => {
    await eventually(() => h.handler.outputStats().inFlight === 0, 10_000);
    const paths = [`${P}?resourceVersion=0`, P, `${P}?limit=100000&labelSelector=half%3Dyes`];
    await sendUnread(paths.map((path) => ({ path, accept: PB })));
    const { sample, highest } = budgetSampler();
    await eventually(() => sample().inFlight > 0, 10_000);
    // Others are served meanwhile, a protobuf list among them.
    expect((await h.get(`${P}/cm-00007`)).status).toBe(200);
    sample();
    const other = await rawGet(tcp, `${P}?limit=1000`, PB);
    expect(decodeProtobufResponse(other.body).items).toHaveLength(1000);
    sample();
    await eventually(() => sample().inFlight === 0, 20_000);
    expect(highest()).toBeLessThanOrEqual(bound(paths.length + 1));
    expect(h.handler.outputStats().peak).toBeLessThanOrEqual(bound(paths.length + 1));
  });

  it("keeps a client that does not read a large page within the budget, and cuts it off", async () => {
    await eventually(() => h.handler.outputStats().inFlight === 0, 10_000);
    const stuck = 3;
    await sendUnread([
      { path: `${P}?limit=100000`, accept: YAML },
      { path: `${P}?limit=100000`, accept: JSON_TYPE },
      { path: `${P}?limit=100000&labelSelector=half%3Dyes`, accept: JSON_TYPE },
    ]);
    const { sample, highest } = budgetSampler();
    // Their responses are streamed: what their sockets did not take is held in the budget.
    await eventually(() => sample().inFlight > 0, 10_000);
    // Others are served meanwhile.
    expect((await h.get(`${P}/cm-00007`)).status).toBe(200);
    sample();
    expect((await h.get(`${P}?limit=1000`)).body.items).toHaveLength(1000);
    sample();
    // Each holds what its socket did not take, within the budget, until it is cut off
    // for taking nothing for the stall time: then what it held goes back.
    await eventually(() => sample().inFlight === 0, 20_000);
    expect(highest()).toBeLessThanOrEqual(bound(stuck + 1));
    expect(h.handler.outputStats().peak).toBeLessThanOrEqual(bound(stuck + 1));
  });

  /** A resourceVersion the configmaps' watch cache has not seen: a write to another type. */
  async function otherTypeRevision(name: string): Promise<number> {
    const s = await h.post(`/api/v1/namespaces/${NS}/secrets`, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name },
    });
    expect(s.status).toBe(201);
    return Number(s.body.metadata.resourceVersion);
  }

  const initialFrom = (rv: number, more = "") =>
    `${P}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${rv}${more}`;

  it("streams initial events read from storage in chunks, then the bookmark at their revision", async () => {
    for (const selector of ["", "&labelSelector=half%3Dyes"]) {
      const rv = await otherTypeRevision(`s${selector ? "-half" : ""}`);
      const isEnd = (body: Buffer) => body.includes("k8s.io/initial-events-end");
      const r = await rawGet(tcp, initialFrom(rv, selector), JSON_TYPE, isEnd);
      expect(r.status).toBe(200);
      const lines = r.body
        .toString("utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l));
      const end = lines.findIndex((e) => e.type === "BOOKMARK");
      const added = lines.slice(0, end);
      const expected = selector ? OBJECTS / 2 : OBJECTS;
      expect(added).toHaveLength(expected);
      expect(added.every((e) => e.type === "ADDED")).toBe(true);
      const bookmark = lines[end].object;
      expect(bookmark.metadata.annotations).toEqual({ "k8s.io/initial-events-end": "true" });
      const at = Number(bookmark.metadata.resourceVersion);
      expect(at).toBeGreaterThanOrEqual(rv);
      // The state at the bookmark's revision, in the list's order.
      const list = await h.get(`${P}?resourceVersion=${at}&resourceVersionMatch=Exact${selector}`);
      expect(added.map((e) => e.object)).toEqual(list.body.items);
      // Written a chunk at a time: about 2 KiB per event, chunks of about 16 KiB.
      const before = r.chunks.length;
      expect(before).toBeGreaterThan(expected / 20);
      expect(Math.max(...r.chunks.map((c) => c.length))).toBeLessThanOrEqual(2 * CHUNK + 4096);
    }
  });

  it("streams initial events from storage as protobuf frames", async () => {
    const rv = await otherTypeRevision("s-protobuf");
    const WatchEvent = protobufRoot().lookupType("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent");
    const frames = (body: Buffer) => {
      const out: { type: string; raw: Uint8Array }[] = [];
      let at = 0;
      while (body.length >= at + 4 && body.length >= at + 4 + body.readUInt32BE(at)) {
        const size = body.readUInt32BE(at);
        const e = WatchEvent.decode(body.subarray(at + 4, at + 4 + size)) as unknown as {
          type: string;
          object: { raw: Uint8Array };
        };
        out.push({ type: e.type, raw: e.object.raw });
        at += 4 + size;
      }
      return out;
    };
    const r = await rawGet(tcp, initialFrom(rv), "application/vnd.kubernetes.protobuf", (body) =>
      frames(body).some((f) => f.type === "BOOKMARK"),
    );
    expect(r.status).toBe(200);
    const events = frames(r.body);
    const end = events.findIndex((f) => f.type === "BOOKMARK");
    expect(end).toBe(OBJECTS);
    expect(events.slice(0, end).every((f) => f.type === "ADDED")).toBe(true);
    const objects = events.slice(0, end).map((f) => decodeProtobufObject(Buffer.from(f.raw)));
    expect(objects.map((o) => o.metadata.name)).toEqual(
      Array.from({ length: OBJECTS }, (_, i) => `cm-${String(i).padStart(5, "0")}`),
    );
    expect(objects[5].data).toEqual({ v: VALUE, n: "5" });
    expect(r.chunks.length).toBeGreaterThan(OBJECTS / 20);
  });

  it("cuts off a watcher that does not take its initial events from storage, within the budget", async () => {
    await eventually(() => h.handler.openWatches() === 0, 10_000);
    await eventually(() => h.handler.outputStats().inFlight === 0, 10_000);
    const rv = await otherTypeRevision("stuck");
    await sendUnread([{ path: initialFrom(rv) }]);
    const { sample, highest } = budgetSampler();
    await eventually(() => {
      sample();
      return h.handler.openWatches() === 1;
    }, 10_000);
    // Its initial events are streamed: what its socket did not take is held in the budget.
    await eventually(() => sample().inFlight > 0, 10_000);
    expect((await h.get(`${P}/cm-00009`)).status).toBe(200);
    // Cut off when it took nothing for the stall time; what it held goes back.
    await eventually(() => {
      sample();
      return h.handler.openWatches() === 0;
    }, 20_000);
    await eventually(() => sample().inFlight === 0, 10_000);
    expect(highest()).toBeLessThanOrEqual(bound(1));
  });
});
