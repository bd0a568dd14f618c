/**
 * The local image store (store.ts): an image is a content-addressed directory
 * (digest.ts) with a manifest (manifest.ts) saying what runs; tags map
 * `name:tag` to a digest; references parse as Pods name images (reference.ts).
 * builtin.ts makes the demo images shipped with Setpoint (images/ in the package)
 * available with no build step.
 */
export { BUILTIN_IMAGES, builtinImagesDir, importBuiltinImages } from "./builtin.ts";
export { treeDigest } from "./digest.ts";
export { type ImageManifest, MANIFEST_FILE, parseManifest } from "./manifest.ts";
export { type ImageReference, parseImageReference, tagKey } from "./reference.ts";
export {
  type ImageListing,
  ImageNotFoundError,
  ImageStore,
  type StoredImage,
} from "./store.ts";
