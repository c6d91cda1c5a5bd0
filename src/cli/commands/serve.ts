// `pi-gateway serve`: placeholder until its issue lands.
import type { Command } from '../command.ts';

export const command: Command = {
  summary: '(not built yet)',
  help: 'pi-gateway serve: not built yet.',
  async run() {
    process.stderr.write('pi-gateway serve: not built yet\n');
    return 1;
  },
};
