/**
 * Image references as a Pod names them: `NAME`, `NAME:TAG`, `NAME@sha256:HEX`,
 * with an optional registry prefix. A local store has one registry, so
 * `docker.io/library/hello` and `hello` name the same image; a missing tag means
 * `latest`, as in Kubernetes.
 */

export interface ImageReference {
  /** The repository name without registry prefix ("hello"). */
  name: string;
  /** The tag ("latest" when none is given and no digest is). */
  tag?: string;
  /** "sha256:<hex>" when the reference pins a digest. */
  digest?: string;
}

const NAME = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

/** Parses a reference; undefined when it is not one. */
export function parseImageReference(ref: string): ImageReference | undefined {
  let rest = ref.trim();
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) return undefined;
  }
  // A first segment with a dot or a port, or "localhost", is a registry host.
  const parts = rest.split("/");
  if (parts.length > 1 && /[.:]|^localhost$/.test(parts[0])) parts.shift();
  if (parts.length > 1 && parts[0] === "library") parts.shift();
  const name = parts.join("/");
  if (!NAME.test(name)) return undefined;
  if (!tag && !digest) tag = "latest";
  return { name, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** `name:tag`, the key of the store's tag table. */
export function tagKey(ref: ImageReference): string {
  return `${ref.name}:${ref.tag ?? "latest"}`;
}
