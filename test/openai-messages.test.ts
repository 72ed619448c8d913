import { describe, expect, it } from '@jest/globals';
import { toChatMessages, toToolChoice } from '../src/adapters/openai-messages.js';
import type { Message } from '../src/core/messages.js';

// How the conversation is written for Chat Completions.

describe('toChatMessages', () => {
  it('keeps text roles, system included', () => {
    const messages: Message[] = [
      { kind: 'text', id: '1', role: 'system', content: 'S' },
      { kind: 'text', id: '2', role: 'developer', content: 'D' },
      { kind: 'text', id: '3', role: 'user', content: 'U' },
      { kind: 'text', id: '4', role: 'assistant', content: 'A' },
    ];
    expect(toChatMessages(messages)).toEqual([
      { role: 'system', content: 'S' },
      { role: 'developer', content: 'D' },
      { role: 'user', content: 'U' },
      { role: 'assistant', content: 'A' },
    ]);
  });

  it('merges calls into the assistant message they belong to and puts each result right after', () => {
    const messages: Message[] = [
      { kind: 'text', id: 'u', role: 'user', content: 'do two things' },
      { kind: 'text', id: 'a1', role: 'assistant', content: 'On it.' },
      { kind: 'actionExecution', id: 'c1', name: 'one', arguments: '{}', parentMessageId: 'a1' },
      { kind: 'actionExecution', id: 'c2', name: 'two', arguments: '{"x":1}', parentMessageId: 'a1' },
      { kind: 'result', id: 'result-c2', actionExecutionId: 'c2', actionName: 'two', result: 'r2' },
      { kind: 'result', id: 'result-c1', actionExecutionId: 'c1', actionName: 'one', result: 'r1' },
    ];
    expect(toChatMessages(messages)).toEqual([
      { role: 'user', content: 'do two things' },
      {
        role: 'assistant',
        content: 'On it.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'one', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'two', arguments: '{"x":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'r1' },
      { role: 'tool', tool_call_id: 'c2', content: 'r2' },
    ]);
  });

  it('drops calls that have no result and results that have no call', () => {
    const messages: Message[] = [
      { kind: 'actionExecution', id: 'c1', name: 'never', arguments: '{}' },
      { kind: 'result', id: 'r9', actionExecutionId: 'c9', actionName: 'ghost', result: 'x' },
      { kind: 'text', id: 'u', role: 'user', content: 'hi' },
    ];
    expect(toChatMessages(messages)).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('sends images as data URLs and leaves agent state out', () => {
    const messages: Message[] = [
      { kind: 'image', id: 'i', role: 'user', format: 'png', bytes: 'AAAA' },
      {
        kind: 'agentState',
        id: 's',
        threadId: 't',
        agentName: 'a',
        nodeName: 'n',
        runId: 'r',
        active: true,
        running: false,
        role: 'assistant',
        state: '{}',
      },
    ];
    expect(toChatMessages(messages)).toEqual([
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    ]);
  });
});

describe('toToolChoice', () => {
  it('maps the forwarded tool choice', () => {
    expect(toToolChoice({ toolChoice: 'required' })).toBe('required');
    expect(toToolChoice({ toolChoice: 'function', toolChoiceFunctionName: 'f' })).toEqual({
      type: 'function',
      function: { name: 'f' },
    });
    expect(toToolChoice({ toolChoice: 'function' })).toBeUndefined();
    expect(toToolChoice({})).toBeUndefined();
  });
});
