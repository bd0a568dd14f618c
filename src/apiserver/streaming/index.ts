/**
 * Streaming large responses: lists and the initial events of watches are written
 * in chunks, each produced only when the client has taken the previous ones
 * (backpressure), within a global budget of bytes in flight, yielding to the
 * event loop between chunks so that light requests are served meanwhile.
 *
 * - output-budget.ts: the global budget of bytes produced and not yet handed to
 *   the kernel, with its accounting;
 * - response-stream.ts: writing chunks to one response with backpressure, the
 *   budget and the stall bound;
 * - turn-slicer.ts: production time per turn of the event loop, shared by all;
 * - chunker.ts: packing many small pieces (list items, watch lines) into chunks;
 * - chunked-frame.ts: an HTTP/1.1 chunk framed once and written as is to many
 *   responses (a watch event's output, shared by the watchers alike).
 */
export { chunkData, chunkedFrame, writeChunk } from "./chunked-frame.ts";
export { type BytesPiece, bytesChunks, type Framing, textChunks } from "./chunker.ts";
export { OutputBudget, type OutputBudgetStats } from "./output-budget.ts";
export { ResponseStream, type StreamOptions, StreamStalledError } from "./response-stream.ts";
export { TurnSlicer } from "./turn-slicer.ts";
