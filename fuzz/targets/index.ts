// The campaign's targets, in the order `--target all` runs them.
import type { Target } from '../lib/target.ts';
import { clientBody } from './client-body.ts';
import { clientHttp } from './client-http.ts';
import { parsers } from './parsers.ts';
import { provider } from './provider.ts';

export const TARGETS: readonly Target[] = [parsers, clientBody, clientHttp, provider];
