/**
 * In-process connections to the apiserver: two streams joined in memory, one end
 * handed to the server's HTTP handler as a connection (Node's HTTP server takes
 * any Duplex as one), the other to a client in the same process
 * (RestConfig.connect). HTTP/1.1 runs over the pair as over a socket, with
 * keep-alive, chunked watch streams, backpressure and deadlines, but with no TLS
 * and no system calls: how `setpoint up`'s own controllers reach the apiserver
 * they run beside. A connection carries no identity; requests authenticate by
 * their credentials as over the network (the server's process tokens).
 *
 * What one end writes reaches the other on a later tick (never inside the
 * writer's call, as with a socket), and a write completes once the other end
 * took it: a reader that stops reading holds the writer's buffer, so the
 * server's slow-watcher bounds work as they do on a socket. Destroying one end
 * closes the other, as a reset connection would.
 */
import type { Server } from "node:http";
import { Duplex } from "node:stream";

/** The address an in-process connection reports (audit's sourceIPs, logs). */
export const IN_PROCESS_ADDRESS = "127.0.0.1";

/** One end of an in-memory connection; see the module comment. */
export class MemorySocket extends Duplex {
  /** The other end. */
  #peer: MemorySocket | undefined;
  /** A write waiting for the other end to read again (its buffer was full). */
  #blocked: (() => void) | undefined;
  #timeoutMs = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly remoteAddress = IN_PROCESS_ADDRESS;
  readonly remotePort = 0;
  readonly localAddress = IN_PROCESS_ADDRESS;
  readonly localPort = 0;
  readonly remoteFamily = "IPv4";
  readonly connecting = false;

  /** Two ends joined to each other: [client end, server end]. */
  static pair(): [MemorySocket, MemorySocket] {
    // As Node's sockets: a client's ends with its readable side, a server's HTTP
    // connection is half-open and closed by the server.
    const client = new MemorySocket(false);
    const server = new MemorySocket(true);
    client.#peer = server;
    server.#peer = client;
    return [client, server];
  }

  private constructor(allowHalfOpen: boolean) {
    super({ allowHalfOpen });
  }

  override _read(): void {
    const peer = this.#peer;
    if (peer === undefined) return;
    const go = peer.#blocked;
    if (go) {
      peer.#blocked = undefined;
      go();
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error) => void): void {
    process.nextTick(() => this.#deliver(chunk, done));
  }

  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    done: (err?: Error) => void,
  ): void {
    const data = chunks.length === 1 ? chunks[0].chunk : Buffer.concat(chunks.map((c) => c.chunk));
    process.nextTick(() => this.#deliver(data, done));
  }

  #deliver(data: Buffer, done: (err?: Error) => void): void {
    const peer = this.#peer;
    if (this.destroyed) return;
    if (!peer || peer.destroyed || peer.readableEnded) {
      done(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      return;
    }
    this.#timer?.refresh();
    peer.#timer?.refresh();
    if (peer.push(data)) done();
    else this.#blocked = () => done();
  }

  override _final(done: (err?: Error) => void): void {
    process.nextTick(() => {
      const peer = this.#peer;
      if (peer && !peer.destroyed) peer.push(null);
      done();
    });
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const blocked = this.#blocked;
    this.#blocked = undefined;
    blocked?.();
    const peer = this.#peer;
    if (peer && !peer.destroyed) process.nextTick(() => peer.destroy());
    done(err);
  }

  /** Emits `timeout` after `ms` with nothing written either way (0: never), as a socket does. */
  setTimeout(ms: number, onTimeout?: () => void): this {
    if (onTimeout) {
      if (ms === 0) this.off("timeout", onTimeout);
      else this.once("timeout", onTimeout);
    }
    this.#timeoutMs = ms;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (ms > 0 && !this.destroyed) {
      this.#timer = setTimeout(() => this.emit("timeout"), this.#timeoutMs);
      this.#timer.unref();
    }
    return this;
  }

  // What HTTP's agents and servers call on sockets; nothing to do in memory.
  setKeepAlive(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  address(): { address: string; family: string; port: number } {
    return { address: IN_PROCESS_ADDRESS, family: "IPv4", port: 0 };
  }
}

/**
 * Where in-process connections come in: each connect() hands the server end of
 * a new pair to `server` (an HTTP server that does not listen), and closeAll()
 * closes every one still open and refuses new ones, as a stopped server does.
 */
export class InProcessConnections {
  readonly #open = new Set<MemorySocket>();
  #closed = false;

  constructor(private readonly server: Server) {}

  /** A new connection's client end; throws ECONNREFUSED once closed. */
  connect(): Duplex {
    if (this.#closed) {
      throw Object.assign(new Error("connect ECONNREFUSED (in process)"), {
        code: "ECONNREFUSED",
      });
    }
    const [client, server] = MemorySocket.pair();
    this.#open.add(server);
    server.once("close", () => this.#open.delete(server));
    this.server.emit("connection", server);
    return client;
  }

  /** Closes every open connection; later connect() calls are refused. */
  closeAll(): void {
    this.#closed = true;
    for (const socket of this.#open) socket.destroy();
  }
}
