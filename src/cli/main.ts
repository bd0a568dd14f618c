/** The `setpoint` command: dispatches to its subcommands. */
export async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    default:
      process.stderr.write(`setpoint: unknown command ${JSON.stringify(command ?? "")}\n`);
      return 2;
  }
}
