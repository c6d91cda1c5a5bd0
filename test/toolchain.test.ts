// The toolchain the suite runs on: Node.js 22 (the one `npm ci` installs for the npm scripts, or the
// machine's own 22), whatever Node.js the machine has on its PATH otherwise.
import t from 'tap';

t.match(process.version, /^v22\./, `the tests run on Node.js 22 (${process.execPath})`);
const [, minor] = process.versions.node.split('.').map(Number);
t.ok((minor ?? 0) >= 19, 'at least 22.19, the oldest the gateway accepts');
