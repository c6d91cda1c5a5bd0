// `pi-gateway usage`: placeholder until its issue lands.
import type { Command } from '../command.ts';

export const command: Command = {
  summary: '(not built yet)',
  help: 'pi-gateway usage: not built yet.',
  async run() {
    process.stderr.write('pi-gateway usage: not built yet\n');
    return 1;
  },
};
