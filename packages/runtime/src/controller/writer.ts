/**
 * The client a reconcile writes through. It forwards to the runtime Client and
 * adds three things:
 * - every write's resulting resourceVersion is reported (`onWrite`), so the
 *   controller can make the next reconcile of the same key wait until its cache
 *   has seen the write (read-your-own-writes);
 * - the reconcile's AbortSignal is passed to every call, and writes are refused
 *   once it has aborted (after a timeout or a lost lease, nothing more is written);
 * - `fieldManager` defaults to the controller's name.
 */
import type { KubeList, KubeObject } from "@setpoint/api";
import {
  type ApplyOptions,
  type Client,
  type CreateOptions,
  type DeleteCollectionOptions,
  type DeleteOptions,
  type GetOptions,
  type ListOptions,
  type PatchOptions,
  type TypeRef,
  typeOf,
  type UpdateOptions,
  type WriteOptions,
} from "../client/client.ts";
import type { Kind } from "../client/kind.ts";

/** One object written by a reconcile, at the version the server returned. */
export interface WrittenObject {
  type: TypeRef;
  name: string;
  namespace?: string | undefined;
  resourceVersion: string;
}

export interface ReconcileClientOptions {
  fieldManager: string;
  /** The reconcile's signal, or a function giving it (called on the first request). */
  signal: AbortSignal | (() => AbortSignal);
  onWrite(w: WrittenObject): void;
}

function withSignal<O extends { signal?: AbortSignal | undefined }>(
  opts: O,
  signal: AbortSignal,
): O {
  return { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, signal]) : signal };
}

export class ReconcileClient {
  constructor(
    /** The underlying client (its writes are not tracked). */
    readonly client: Client,
    private readonly opts: ReconcileClientOptions,
  ) {}

  /** The reconcile's signal, passed to every call. */
  private get signal(): AbortSignal {
    const s = this.opts.signal;
    return typeof s === "function" ? s() : s;
  }

  /** Reads from the server (uncached). Prefer the context's cache reader. */
  get<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace?: string,
    opts: GetOptions = {},
  ): Promise<T> {
    return this.client.get<T>(type, name, namespace, withSignal(opts, this.signal));
  }

  /** Lists from the server (uncached). Prefer the context's cache reader. */
  list<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    opts: ListOptions = {},
  ): Promise<KubeList<T>> {
    return this.client.list<T>(type, withSignal(opts, this.signal));
  }

  /** Creates an object, or posts to a subresource (`opts.subresource`, e.g. a Pod's binding). */
  create<T extends KubeObject>(obj: T, opts: CreateOptions = {}): Promise<T> {
    const type = opts.subresource && opts.parentType ? opts.parentType : typeOf(obj);
    return this.track(type, () => this.client.create(obj, this.writeOpts(opts)));
  }

  /** Replaces an object, or one of its subresources (`opts.subresource`). */
  update<T extends KubeObject>(obj: T, opts: UpdateOptions = {}): Promise<T> {
    const type = opts.subresource && opts.parentType ? opts.parentType : typeOf(obj);
    return this.track(type, () => this.client.update(obj, this.writeOpts(opts)));
  }

  updateStatus<T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.track(typeOf(obj), () => this.client.updateStatus(obj, this.writeOpts(opts)));
  }

  patch<T extends KubeObject = KubeObject>(
    type: Kind<T>,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    opts: PatchOptions,
  ): Promise<T> {
    return this.track(type, () =>
      this.client.patch<T>(type, name, namespace, patch, this.writeOpts(opts)),
    );
  }

  /** Server-side apply; `fieldManager` defaults to the controller's name. */
  apply<T extends KubeObject>(obj: T, opts: Partial<ApplyOptions> = {}): Promise<T> {
    const full: ApplyOptions = {
      ...opts,
      fieldManager: opts.fieldManager ?? this.opts.fieldManager,
    };
    return this.track(typeOf(obj), () => this.client.apply(obj, withSignal(full, this.signal)));
  }

  delete(type: TypeRef, name: string, namespace?: string, opts: DeleteOptions = {}): Promise<void> {
    this.refuseIfAborted();
    return this.client.delete(type, name, namespace, withSignal(opts, this.signal));
  }

  /** Deletes every object of a kind the options select (one request). */
  deleteCollection(type: TypeRef, opts: DeleteCollectionOptions = {}): Promise<void> {
    this.refuseIfAborted();
    return this.client.deleteCollection(type, withSignal(opts, this.signal));
  }

  private writeOpts<O extends WriteOptions>(opts: O): O {
    return withSignal(
      { ...opts, fieldManager: opts.fieldManager ?? this.opts.fieldManager },
      this.signal,
    );
  }

  private refuseIfAborted(): void {
    const s = this.signal;
    if (s.aborted) {
      throw s.reason instanceof Error
        ? s.reason
        : new Error(`reconcile aborted: ${String(s.reason)}`);
    }
  }

  private async track<T extends KubeObject>(type: TypeRef, write: () => Promise<T>): Promise<T> {
    this.refuseIfAborted();
    const out = await write();
    const rv = out?.metadata?.resourceVersion;
    if (rv && out.metadata.name) {
      const w: WrittenObject = { type, name: out.metadata.name, resourceVersion: rv };
      if (out.metadata.namespace) w.namespace = out.metadata.namespace;
      this.opts.onWrite(w);
    }
    return out;
  }
}
