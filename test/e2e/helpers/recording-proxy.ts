/**
 * An HTTP proxy that forwards every request to a plain-http apiserver and records
 * what the client sent (method, URL, Content-Type): to see what kubectl puts on the
 * wire, e.g. protobuf bodies.
 */
import { forward, listenHttp } from "../../helpers/http-proxy.ts";

export interface RecordedRequest {
  method: string;
  url: string;
  contentType: string | undefined;
}

export interface RecordingProxy {
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a proxy on a free 127.0.0.1 port forwarding to `target` (an http:// URL). */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const { url, close } = await listenHttp((req, res) => {
    requests.push({
      method: req.method ?? "",
      url: req.url ?? "",
      contentType: req.headers["content-type"],
    });
    forward(req, res, upstream);
  });
  return { url, requests, close };
}
