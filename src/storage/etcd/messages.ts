/**
 * TypeScript shapes of the etcd v3 messages in proto/rpc.proto and proto/kv.proto, as
 * @grpc/proto-loader encodes and decodes them with the options in client.ts: field
 * names as in the .proto files (snake_case), 64-bit integers as JavaScript numbers
 * (revisions stay far below 2^53), bytes as Buffers, absent scalar fields decoded as
 * their defaults.
 */

/** mvccpb.KeyValue: one key at one revision. */
export interface EtcdKeyValue {
  key: Buffer;
  create_revision: number;
  mod_revision: number;
  version: number;
  value: Buffer;
  lease: number;
}

/** mvccpb.Event.EventType. */
export const EventType = { PUT: 0, DELETE: 1 } as const;

/** mvccpb.Event: one change delivered by a watch. */
export interface EtcdEvent {
  type: number;
  kv: EtcdKeyValue | null;
  prev_kv: EtcdKeyValue | null;
}

export interface ResponseHeader {
  cluster_id: number;
  member_id: number;
  /** The store's revision when the request was applied. */
  revision: number;
  raft_term: number;
}

export interface RangeRequest {
  key: Uint8Array;
  range_end?: Uint8Array;
  limit?: number;
  revision?: number;
  serializable?: boolean;
  keys_only?: boolean;
  count_only?: boolean;
}

export interface RangeResponse {
  header: ResponseHeader;
  kvs: EtcdKeyValue[];
  more: boolean;
  /** Keys in the whole requested range (not cut by `limit`). */
  count: number;
}

export interface PutRequest {
  key: Uint8Array;
  value: Uint8Array;
  prev_kv?: boolean;
}

export interface PutResponse {
  header: ResponseHeader;
  prev_kv: EtcdKeyValue | null;
}

export interface DeleteRangeRequest {
  key: Uint8Array;
  range_end?: Uint8Array;
  prev_kv?: boolean;
}

export interface DeleteRangeResponse {
  header: ResponseHeader;
  deleted: number;
  prev_kvs: EtcdKeyValue[];
}

export interface RequestOp {
  request_range?: RangeRequest;
  request_put?: PutRequest;
  request_delete_range?: DeleteRangeRequest;
}

export interface ResponseOp {
  response_range?: RangeResponse;
  response_put?: PutResponse;
  response_delete_range?: DeleteRangeResponse;
}

/** etcdserverpb.Compare.CompareResult. */
export const CompareResult = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } as const;
/** etcdserverpb.Compare.CompareTarget. */
export const CompareTarget = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3 } as const;

export interface Compare {
  result: number;
  target: number;
  key: Uint8Array;
  version?: number;
  create_revision?: number;
  mod_revision?: number;
  value?: Uint8Array;
}

export interface TxnRequest {
  compare: Compare[];
  success: RequestOp[];
  failure: RequestOp[];
}

export interface TxnResponse {
  header: ResponseHeader;
  succeeded: boolean;
  responses: ResponseOp[];
}

export interface CompactionRequest {
  revision: number;
  physical?: boolean;
}

export interface CompactionResponse {
  header: ResponseHeader;
}

export interface WatchCreateRequest {
  key: Uint8Array;
  range_end?: Uint8Array;
  /** First revision to deliver (inclusive); 0 means "from now". */
  start_revision?: number;
  progress_notify?: boolean;
  prev_kv?: boolean;
}

export interface WatchRequest {
  create_request?: WatchCreateRequest;
  cancel_request?: { watch_id: number };
}

export interface WatchResponse {
  header: ResponseHeader | null;
  watch_id: number;
  created: boolean;
  canceled: boolean;
  /** Set when the watch was canceled because its start revision has been compacted. */
  compact_revision: number;
  cancel_reason: string;
  fragment: boolean;
  events: EtcdEvent[];
}

export type StatusRequest = Record<string, never>;

export interface StatusResponse {
  header: ResponseHeader;
  version: string;
  dbSize: number;
  leader: number;
  raftIndex: number;
  raftTerm: number;
  errors: string[];
}
