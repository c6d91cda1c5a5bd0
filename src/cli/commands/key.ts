// `pi-gateway key`: placeholder until its issue lands.
import type { Command } from '../command.ts';

export const command: Command = {
  summary: '(not built yet)',
  help: 'pi-gateway key: not built yet.',
  async run() {
    process.stderr.write('pi-gateway key: not built yet\n');
    return 1;
  },
};
