// Azure OpenAI: the deployment name (our upstream model id) is part of the path, the API version is a
// query parameter, and the key goes in `api-key`.
import { type PlatformAdapter, joinUrl } from './types.ts';

const PATHS: Record<string, string> = {
  chat_completions: '/chat/completions',
  images_generations: '/images/generations',
  images_edits: '/images/edits',
};

export const azureOpenai: PlatformAdapter = {
  id: 'azure-openai',
  endpoints: Object.keys(PATHS),
  validateOptions(options) {
    const problems: string[] = [];
    for (const k of Object.keys(options)) if (k !== 'api_version') problems.push(`adapter "azure-openai" has no option "${k}"`);
    if (typeof options['api_version'] !== 'string') problems.push('adapter "azure-openai" needs option "api_version" (a string such as "2024-10-21")');
    return problems;
  },
  request(target, req) {
    const version = encodeURIComponent(String(target.platform.adapterOptions['api_version']));
    const deployment = encodeURIComponent(target.deployment.upstreamModel);
    const path = `/openai/deployments/${deployment}${PATHS[req.endpoint] ?? '/'}?api-version=${version}`;
    return { url: joinUrl(target.resource.baseUrl, path), headers: [['api-key', target.credential]] };
  },
};
