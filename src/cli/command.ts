// The shape every CLI command module exports.

export interface Command {
  /** One line for the command list. */
  summary: string;
  /** Full `--help` text. */
  help: string;
  /** Runs the command; resolves to the process exit code. */
  run(argv: string[]): Promise<number>;
}
