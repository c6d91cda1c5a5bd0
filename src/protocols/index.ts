// Endpoint id → the inbound protocol module that serves it.
import { chatCompletions } from './chat-completions.ts';
import { images } from './images.ts';
import { messages } from './messages.ts';
import { responses } from './responses.ts';
import type { ProtocolModule } from './types.ts';

export const PROTOCOL_MODULES: readonly ProtocolModule[] = [chatCompletions, responses, messages, images];

export function protocolFor(endpoint: string): ProtocolModule | undefined {
  return PROTOCOL_MODULES.find((p) => p.endpoints.includes(endpoint));
}
