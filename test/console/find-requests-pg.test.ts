// Finding a request on a fleet node (`serve --db postgres://…`, run in process on a private
// PostgreSQL): the find-requests contract (test/helpers/find-requests-contract.ts, run on the
// embedded store by find-requests.test.ts) on a fresh node and database per check.
import t from 'tap';
import { fleetConsoles } from '../helpers/console-rigs.ts';
import { findRequestsContract } from '../helpers/find-requests-contract.ts';

const consoles = fleetConsoles(t);

t.test('finding requests on PostgreSQL (a fleet node)', async (t) => {
  findRequestsContract(t, consoles.rig);
});
