/**
 * A TCP proxy that injects the network faults a real server cannot produce on
 * request: every connection dropped at once, or a connection that stays open but
 * goes silent (bytes from the server withheld, as behind a dead NAT entry). TLS
 * passes through untouched.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Bytes from the server are withheld. */
  frozen: boolean;
}

export class FaultProxy {
  private readonly pairs = new Set<Pair>();
  private blocked = false;
  /** Connections accepted so far. */
  connections = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly protocol: string,
  ) {}

  /** Starts a proxy on a free 127.0.0.1 port forwarding to `target` (a URL). */
  static async start(target: string): Promise<FaultProxy> {
    const { hostname, port, protocol } = new URL(target);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const addr = server.address();
    if (!addr || typeof addr !== "object") throw new Error("proxy has no port");
    const proxy = new FaultProxy(server, addr.port, protocol);
    server.on("connection", (c) => proxy.accept(c, hostname, Number(port)));
    return proxy;
  }

  /** The proxy's URL, with the target's scheme. */
  get url(): string {
    return `${this.protocol}//127.0.0.1:${this.port}`;
  }

  /** Cuts every open connection (new ones are accepted). */
  drop(): void {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Cuts every open connection and refuses new ones until unblock(). */
  block(): void {
    this.blocked = true;
    this.drop();
  }

  unblock(): void {
    this.blocked = false;
  }

  /** Withholds everything the server sends on the connections open now, keeping them open. New connections work. */
  stall(): void {
    for (const p of this.pairs) p.frozen = true;
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.blocked) {
      client.destroy();
      return;
    }
    this.connections++;
    const upstream = connect(port, host);
    const pair: Pair = { client, upstream, frozen: false };
    this.pairs.add(pair);
    client.on("data", (d) => upstream.write(d));
    upstream.on("data", (d) => {
      if (!pair.frozen) client.write(d);
    });
    for (const s of [client, upstream]) {
      s.on("error", () => {});
      s.on("close", () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      });
    }
  }
}
