/**
 * Who may call the agent's endpoint: a client presenting a certificate that the
 * cluster's CA signed (the CA the agent trusts the apiserver with, from its
 * kubeconfig, or --client-ca-file) and whose subject is the apiserver's node
 * client identity. Anyone else is refused: 401 without a verified certificate
 * (never anonymous), 403 for another identity, worded as the kubelet words them.
 */
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";

/** The identity the apiserver presents to the agents (its certificate's CN). */
export const APISERVER_NODE_CLIENT = "kube-apiserver-kubelet-client";

export type CallerCheck =
  | { ok: true; user: string }
  | { ok: false; code: 401 | 403; message: string };

/** Checks the caller of `req` (a request on the agent's TLS server). */
export function checkCaller(req: IncomingMessage, subresource: string): CallerCheck {
  const socket = req.socket as TLSSocket;
  if (!socket.authorized) return { ok: false, code: 401, message: "Unauthorized" };
  const peer = socket.getPeerCertificate();
  const cn = peer?.subject?.CN;
  const user = Array.isArray(cn) ? cn[0] : (cn ?? "");
  if (user !== APISERVER_NODE_CLIENT) {
    return {
      ok: false,
      code: 403,
      message: `Forbidden (user=${user}, verb=get, resource=nodes, subresource(s)=[${subresource}])`,
    };
  }
  return { ok: true, user };
}
