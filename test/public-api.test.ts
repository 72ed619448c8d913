import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CopilotRuntimeClient } from '@copilotkit/runtime-client-gql';
// Everything the gateway's side of this test is made of comes from the package's public exports alone.
import {
  BadUserInputError,
  ConfigurationError,
  createGateway,
  type AgentClient,
  type AgentDefinition,
  type Gateway,
  type ModelAdapter,
  type ModelOutput,
  type ModelRequest,
  type RunWriter,
  type ServerAction,
  type TokenUsage,
} from '../src/index.js';
import { runInput, silentLogger, userMessage } from './support/harness.js';
import { COPILOT_RUN, textOfEvents, watch } from './support/threads.js';

// A user of the package writes a model adapter, a server action and an agent kind of their own with
// nothing but what src/index.ts exports (its types come from src/public-types.ts), and a gateway runs
// them: text, an action call executed on the server with the model answering from its result, and
// an agent of the new kind over graphql-ws.

/** A model that asks for the `weather` action once, then answers from its result. */
class ScriptedModel implements ModelAdapter {
  readonly name = 'scripted';
  async stream(request: ModelRequest, output: ModelOutput): Promise<void> {
    const last = request.messages.at(-1);
    if (last?.kind === 'result') {
      // Its thinking and what it used, where a provider says them: shown apart from the answer, added up per model.
      const thought = output.reasoningStart();
      output.reasoningContent(thought, 'The action said the weather.');
      output.reasoningEnd(thought);
      const used: TokenUsage = { provider: 'scripted', model: 'v1', inputTokens: 12, outputTokens: 5 };
      output.usage(used);
      const id = output.textStart();
      output.textContent(id, `It is ${last.result}.`);
      output.textEnd(id);
      return;
    }
    if (!request.tools.some((tool) => tool.name === 'weather'))
      throw new BadUserInputError('The weather tool is missing.');
    const call = output.actionStart(null, 'weather');
    output.actionArgs(call, JSON.stringify({ city: 'Lyon' }));
    output.actionEnd(call);
  }
}

const weather: ServerAction<{ city: string }> = {
  name: 'weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  handler: ({ city }) => `sunny in ${city}`,
};

/** An agent kind of one's own: it answers with the user's last words, backwards. */
function backwardsAgent(options: { description: string }): AgentDefinition {
  return {
    kind: 'backwards',
    create(name, { logger }, where) {
      if (typeof options?.description !== 'string')
        throw new ConfigurationError(`${where}.description must be a string.`);
      const client: AgentClient = {
        async run(request, out: RunWriter) {
          logger.debug({ agent: name }, 'answering backwards');
          const last = request.messages.at(-1);
          const text = last?.kind === 'text' ? last.content : '';
          const id = out.textStart();
          out.textContent(id, [...text].reverse().join(''));
          out.textEnd(id);
          out.agentState({
            agentName: name,
            nodeName: 'reverse',
            state: JSON.stringify({ reversed: text.length }),
            running: false,
            active: false,
          });
        },
        async loadState() {
          return { threadExists: false, state: {}, messages: [] };
        },
      };
      return { name, description: options.description, kind: 'backwards', client };
    },
  };
}

let gateway: Gateway;
let url: string;

beforeAll(async () => {
  gateway = createGateway({
    adapter: new ScriptedModel(),
    actions: [weather],
    agents: { mirror: backwardsAgent({ description: 'Says it backwards.' }) },
    logger: silentLogger,
    environment: 'production',
  });
  url = await gateway.listen(0, '127.0.0.1');
});
afterAll(() => gateway?.close());

describe('the public API', () => {
  it('runs a model adapter and a server action written with its exports alone: the model calls the action, the gateway executes it, the model answers from its result', async () => {
    const client = new CopilotRuntimeClient({ url });
    const result = await client
      .generateCopilotResponse({ data: runInput([userMessage('What is the weather?')]) as any })
      .toPromise();
    expect(result.error).toBeUndefined();
    const response = result.data!.generateCopilotResponse;
    expect(response.status).toMatchObject({ code: 'Success' });
    const messages = response.messages as any[];
    expect(messages.find((message) => message.__typename === 'ResultMessageOutput')).toMatchObject({
      actionName: 'weather',
      result: 'sunny in Lyon',
    });
    expect(messages.at(-1).content.join('')).toBe('It is sunny in Lyon.');
  });

  it("streams a custom adapter's reasoning and usage to GraphQL subscribers", async () => {
    const run = watch(
      url.replace(/^http/, 'ws'),
      /* GraphQL */ `
        subscription ($data: GenerateCopilotResponseInput!) {
          copilotRun(data: $data) {
            __typename
            ... on ReasoningContentEvent {
              content
            }
            ... on RunFinishedEvent {
              usage {
                provider
                model
                inputTokens
                outputTokens
              }
            }
          }
        }
      `,
      { data: runInput([userMessage('What is the weather?')]) },
    );
    await run.done;
    expect(run.errors).toEqual([]);
    expect(run.events.find((event) => event.__typename === 'ReasoningContentEvent').content).toBe(
      'The action said the weather.',
    );
    expect(run.events.at(-1).usage).toEqual([{ provider: 'scripted', model: 'v1', inputTokens: 12, outputTokens: 5 }]);
  });

  it('runs an agent of a kind of its own, listed with the others and streamed over graphql-ws', async () => {
    const agents = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ availableAgents { agents { name description } } }' }),
    });
    expect((await agents.json()).data.availableAgents.agents).toEqual([
      { name: 'mirror', description: 'Says it backwards.' },
    ]);
    const run = watch(url.replace(/^http/, 'ws'), COPILOT_RUN, {
      data: runInput([userMessage('stressed')], { agentSession: { agentName: 'mirror' } }),
    });
    await run.done;
    expect(run.errors).toEqual([]);
    expect(textOfEvents(run.events)).toBe('desserts');
    expect(run.events.find((event) => event.__typename === 'AgentStateMessageEvent')).toMatchObject({
      agentName: 'mirror',
      state: '{"reversed":8}',
    });
    expect(run.events.at(-1).status.code).toBe('Success');
  });

  it("checks an agent kind's own options when the gateway is built, naming where", () => {
    expect(() => createGateway({ agents: { mirror: backwardsAgent({} as any) } })).toThrow(
      'options.agents.mirror.description must be a string.',
    );
  });
});
