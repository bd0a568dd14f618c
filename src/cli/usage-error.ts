/** A mistake in how a command was called: printed without a stack, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
