import { describe, expect, it } from '@jest/globals';
import { userMessage } from './support/harness.js';
import { TRANSPORTS } from './support/transports.js';
import { anthropicKind, googleKind, modelKind, openAIResponsesKind, type UpstreamKind } from './support/upstreams.js';

// The common causes of a provider's refusal get a message that says what to check, for every
// provider: a model it does not have, a conversation longer than its context window.

const KINDS: [UpstreamKind, string][] = [
  [modelKind, 'OPENAI_MODEL'],
  [openAIResponsesKind, 'OPENAI_MODEL'],
  [anthropicKind, 'ANTHROPIC_MODEL'],
  [googleKind, 'GOOGLE_MODEL'],
];

describe.each(KINDS.map(([kind, variable]) => [kind.name, kind, variable] as const))(
  '%s',
  (_name, kind, modelVariable) => {
    it('says the conversation is too long for the model, and how to cap it', async () => {
      const env = await kind.start();
      try {
        const outcome = await TRANSPORTS[2].run(env.gateway, env.input([userMessage('[too-long]')]));
        expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_REJECTED' } });
        expect(outcome.status.details.description).toMatch(
          /The conversation is longer than the model can take: start a new thread, or cap it with MAX_INPUT_CHARS\.$/,
        );
      } finally {
        await env.stop();
      }
    });

    it(`says to check ${modelVariable} when the provider has no such model`, async () => {
      const env = await kind.start();
      try {
        const outcome = await TRANSPORTS[2].run(env.gateway, env.input([userMessage('[fail=404]')]));
        expect(outcome.status).toMatchObject({ code: 'Failed', details: { code: 'UPSTREAM_REJECTED' } });
        expect(outcome.status.details.description).toContain(`Check the model name (${modelVariable}).`);
      } finally {
        await env.stop();
      }
    });
  },
);
