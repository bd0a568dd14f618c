/**
 * The watch cache: one storage watch per resource type, a window of recent events
 * and the current state in memory (watch-cache.ts), one cache per type
 * (watch-caches.ts), and the objects' JSON packed outside the heap (watch-slabs.ts).
 * It serves resourceVersion=0 lists and watches that start inside the window.
 */
export * from "./watch-cache.ts";
export * from "./watch-caches.ts";
export * from "./watch-slabs.ts";
