/**
 * Closing a connection whose request body was refused before it was all sent (413),
 * the way Go's HTTP server does it, so the client reads the answer instead of failing
 * its write with "broken pipe" or "connection reset".
 *
 * Node would destroy the socket as soon as the answer is flushed; with the client
 * still sending, the unread bytes make the kernel reset the connection, and a client
 * that is still writing (kubectl sending a large object) never sees the 413. Instead:
 * send the answer, half-close (FIN: "no more from me"), keep reading and discarding
 * what the client still sends (through the HTTP parser, into the dumped request), and
 * close once it closes its side, or after DRAIN_MAX_MS.
 */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

/** Longest wait for the client to close its side after a refused body. */
export const DRAIN_MAX_MS = 10_000;

/** Makes the response's end close `req`'s connection gracefully (see above). */
export function closeAfterDraining(req: IncomingMessage): void {
  const socket = req.socket as Socket & { destroySoon?: () => void };
  if (socket.destroyed) return;
  // Node's HTTP server ends a "Connection: close" response with socket.destroySoon().
  socket.destroySoon = () => drainAndClose(socket);
  // The request stream discards what the HTTP parser still hands it.
  req.resume();
}

function drainAndClose(socket: Socket): void {
  const cut = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(cut, DRAIN_MAX_MS);
  timer.unref();
  socket.once("end", cut);
  socket.once("close", () => clearTimeout(timer));
  socket.on("error", cut);
  socket.end();
  socket.resume();
}
