import fc from 'fast-check';
import type { ScriptedAnswer } from './fuzz-upstream.js';

/**
 * Malformed upstream streams: a sequence of pieces (well-formed events, events of the wrong shape,
 * invalid JSON, garbage lines, random bytes), joined, cut into chunks at random byte offsets (inside
 * lines, JSON strings and UTF-8 characters), and ended cleanly or by a broken connection.
 */

export interface StreamCase {
  status: number;
  contentType: string;
  /** Each piece as text, or bytes (random bytes, possibly not UTF-8). */
  pieces: (string | number[])[];
  /** Byte offsets at which the whole is cut into chunks (taken modulo its length). */
  cuts: number[];
  ending: 'end' | 'destroy';
}

/** The answer the scripted upstream writes for a case. */
export function answerOf(stream: StreamCase): ScriptedAnswer {
  const bytes = Buffer.concat(
    stream.pieces.map((piece) => (typeof piece === 'string' ? Buffer.from(piece, 'utf8') : Buffer.from(piece))),
  );
  const offsets = [...new Set(stream.cuts.map((cut) => (bytes.length ? cut % bytes.length : 0)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const offset of [...offsets, bytes.length]) {
    if (offset > from) chunks.push(bytes.subarray(from, offset));
    from = Math.max(from, offset);
  }
  return { status: stream.status, contentType: stream.contentType, chunks, ending: stream.ending };
}

/** A short description of a case for failure messages (the pieces abridged). */
export function describeStream(stream: StreamCase): string {
  const text = stream.pieces
    .map((piece) => (typeof piece === 'string' ? piece : `<bytes ${Buffer.from(piece).toString('hex')}>`))
    .join('');
  return `HTTP ${stream.status} ${stream.contentType}, ${stream.ending}, cut at ${stream.cuts.join(',')}: ${JSON.stringify(text.length > 3000 ? `${text.slice(0, 3000)}…` : text)}`;
}

// --- shared pieces ------------------------------------------------------------------------------

const text = fc.oneof(
  { weight: 5, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12, unit: 'binary' }) },
  { weight: 1, arbitrary: fc.constantFrom('', '\u0000', '\\', '"', '\n', '\r\n', 'data: x', '[DONE]', '\uD800') },
);
const anyJson = fc.jsonValue({ maxDepth: 3 });
const randomBytes = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 24 });
/** A value of the wrong type for a field that should be a string or number. */
const wrong = fc.oneof(fc.constantFrom(null, 0, -1, true, '', [], {}, [null], { a: 1 }), anyJson);
const invalidJson = fc.oneof(
  fc.constantFrom(
    '{',
    '{"',
    '{"a":',
    '[1,',
    'nul',
    'tru',
    '{"a":1}}',
    "{'a':1}",
    'NaN',
    'undefined',
    '{"a":"\\x"}',
    '{"a":"\\u12"}',
    '0x10',
    '{"a":01}',
    '\u0000',
    '{"choices":[{',
  ),
  fc.string({ maxLength: 20 }).filter((candidate) => {
    try {
      JSON.parse(candidate);
      return false;
    } catch {
      return true;
    }
  }),
);
/** A line that is not what the format expects at all. */
const garbageLine = fc.oneof(
  fc.constantFrom(
    ': comment',
    'event: foo',
    'event:',
    'id: 7',
    'retry: 10',
    'retry: x',
    'data',
    'data:',
    'data:  ',
    ':',
    'field without colon',
    '\uFEFF',
    '\r',
    'DATA: {}',
    ' data: {}',
  ),
  text,
);
const lineEnd = fc.oneof(
  { weight: 6, arbitrary: fc.constant('\n') },
  { weight: 1, arbitrary: fc.constantFrom('\r\n', '\r', '\n\n', '\r\n\r\n', '') },
);

const cutsArb = fc.array(fc.nat(), { maxLength: 8 });
const endingArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant<'end'>('end') },
  { weight: 1, arbitrary: fc.constant<'destroy'>('destroy') },
);
/** Mostly 200; sometimes an error status or an answer of another content type. */
function statusArb(contentType: string) {
  return fc.oneof(
    { weight: 12, arbitrary: fc.record({ status: fc.constant(200), contentType: fc.constant(contentType) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        status: fc.constant(200),
        contentType: fc.constantFrom('application/json', 'text/html', 'application/octet-stream', ''),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        status: fc.constantFrom(204, 301, 400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504, 599),
        contentType: fc.constantFrom(contentType, 'application/json', 'text/html'),
      }),
    },
  );
}

function streamArb(
  pieceArb: fc.Arbitrary<string | number[]>,
  contentType: string,
  tail: fc.Arbitrary<string[]>,
): fc.Arbitrary<StreamCase> {
  return fc
    .record({
      head: statusArb(contentType),
      pieces: fc.array(pieceArb, { maxLength: 14 }),
      tail,
      cuts: cutsArb,
      ending: endingArb,
    })
    .map(({ head, pieces, tail, cuts, ending }) => ({ ...head, pieces: [...pieces, ...tail], cuts, ending }));
}

// --- OpenAI Chat Completions (SSE) ----------------------------------------------------------------

const chunk = (delta: unknown, finish: unknown = null, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'chatcmpl-fuzz',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });
const toolName = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('echo', 'remoteEcho', 'frontendThing', 'aguiAgent') },
  { weight: 1, arbitrary: text },
);

/**
 * Chat Completions chunks of the wrong shape, each with what the run must end with: a chunk that is not
 * an object, text content that is not a string, tool calls that are not a list, or a tool call that is
 * not an object or whose index, id, name or arguments (when present) are of the wrong type is a broken
 * upstream (UPSTREAM_BAD_RESPONSE); a chunk id that is not a string is only not used (the run succeeds).
 */
const wrongTyped = fc.constantFrom<unknown>({ a: 1 }, [null], 5, true, [], {}, -1.5);
export const openAiOddChunkArb: fc.Arbitrary<{ data: string; verdict: 'Success' | 'UPSTREAM_BAD_RESPONSE' }> = fc.oneof(
  fc
    .constantFrom('null', '5', '"x"', 'true', '-1.5')
    .map((data) => ({ data, verdict: 'UPSTREAM_BAD_RESPONSE' as const })),
  fc
    .constantFrom<unknown>({ a: 1 }, [null], 5, true, 1.5)
    .map((content) => ({ data: chunk({ content }), verdict: 'UPSTREAM_BAD_RESPONSE' as const })),
  fc
    .constantFrom<unknown>('x', { length: 1 }, 'tool')
    .map((calls) => ({ data: chunk({ tool_calls: calls }), verdict: 'UPSTREAM_BAD_RESPONSE' as const })),
  fc
    .constantFrom<unknown>(null, 5, 'x', true)
    .map((call) => ({ data: chunk({ tool_calls: [call] }), verdict: 'UPSTREAM_BAD_RESPONSE' as const })),
  fc.constantFrom<unknown>('0', { a: 1 }, [0], true).map((index) => ({
    data: chunk({ tool_calls: [{ index, id: 'call_w', function: { name: 'echo', arguments: '' } }] }),
    verdict: 'UPSTREAM_BAD_RESPONSE' as const,
  })),
  wrongTyped.map((id) => ({
    data: chunk({ tool_calls: [{ index: 0, id, function: { name: 'echo', arguments: '' } }] }),
    verdict: 'UPSTREAM_BAD_RESPONSE' as const,
  })),
  fc.constantFrom<unknown>(5, 'x', true).map((fn) => ({
    data: chunk({ tool_calls: [{ index: 0, id: 'call_w', function: fn }] }),
    verdict: 'UPSTREAM_BAD_RESPONSE' as const,
  })),
  wrongTyped.map((name) => ({
    data: chunk({ tool_calls: [{ index: 0, id: 'call_w', function: { name, arguments: '' } }] }),
    verdict: 'UPSTREAM_BAD_RESPONSE' as const,
  })),
  wrongTyped.map((args) => ({
    data: chunk({ tool_calls: [{ index: 0, id: 'call_w', function: { name: 'frontendThing', arguments: args } }] }),
    verdict: 'UPSTREAM_BAD_RESPONSE' as const,
  })),
  fc
    .constantFrom<unknown>({ a: 1 }, [null], 5, true, null)
    .map((id) => ({ data: chunk({ content: 'x' }, null, { id }), verdict: 'Success' as const })),
  fc.constantFrom<unknown>({ a: 1 }, [null], 5, true).map((id) => ({
    data: chunk(
      { tool_calls: [{ index: 0, id: 'call_ok', function: { name: 'frontendThing', arguments: '{}' } }] },
      null,
      { id },
    ),
    verdict: 'Success' as const,
  })),
);

/** A well-formed Chat Completions stream with one chunk of a wrong shape in it (openAiOddChunkArb), and what the run must end with. */
export const openAiOddStreamArb: fc.Arbitrary<{ stream: StreamCase; verdict: 'Success' | 'UPSTREAM_BAD_RESPONSE' }> = fc
  .tuple(openAiOddChunkArb, fc.nat({ max: 2 }))
  .map(([{ data, verdict }, at]) => {
    const events = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hello ' }),
      chunk({ content: 'there.' }),
    ];
    events.splice(at, 0, data);
    return {
      verdict,
      stream: {
        status: 200,
        contentType: 'text/event-stream',
        pieces: [...events, chunk({}, 'stop'), '[DONE]'].map((event) => `data: ${event}\n\n`),
        cuts: [],
        ending: 'end',
      },
    };
  });

/** One `data:` payload of a Chat Completions stream: right, of the wrong shape, or not JSON. */
const openAiData = fc.oneof(
  { weight: 6, arbitrary: text.map((content) => chunk({ content })) },
  { weight: 1, arbitrary: fc.constant(chunk({ role: 'assistant', content: '' })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ index: fc.nat({ max: 2 }), id: fc.constantFrom('call_a', 'call_b', undefined), name: toolName })
      .map(({ index, id, name }) =>
        chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] }),
      ),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({
        index: fc.nat({ max: 2 }),
        args: fc.oneof(text, fc.constantFrom('{"text":', '"hi"}', '{}', '{"a":1}', '[')),
      })
      .map(({ index, args }) => chunk({ tool_calls: [{ index, function: { arguments: args } }] })),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('stop', 'tool_calls', 'length', 'content_filter', 'function_call', 'weird')
      .map((finish) => chunk({}, finish)),
  },
  { weight: 1, arbitrary: fc.constant('[DONE]') },
  { weight: 1, arbitrary: text.map((message) => JSON.stringify({ error: { message, type: 'server_error' } })) },
  { weight: 1, arbitrary: invalidJson },
  { weight: 1, arbitrary: openAiOddChunkArb.map(({ data }) => data) },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.constantFrom(
        'null',
        '1',
        '"x"',
        '[]',
        'true',
        '{}',
        '{"choices":null}',
        '{"choices":[null]}',
        '{"choices":{}}',
        '{"choices":"x"}',
        '{"choices":[{"delta":null}]}',
        '{"choices":[{}]}',
        '{"error":null}',
        '{"error":"boom"}',
      ),
      wrong.map((content) => chunk({ content })),
      wrong.map((calls) => chunk({ tool_calls: calls })),
      wrong.map((call) => chunk({ tool_calls: [call] })),
      wrong.map((index) =>
        chunk({ tool_calls: [{ index, id: 'call_w', function: { name: 'echo', arguments: '{}' } }] }),
      ),
      wrong.map((id) => chunk({ tool_calls: [{ index: 0, id, function: { name: 'echo', arguments: '{}' } }] })),
      wrong.map((fn) => chunk({ tool_calls: [{ index: 0, id: 'call_w', function: fn }] })),
      wrong.map((name) => chunk({ tool_calls: [{ index: 0, id: 'call_w', function: { name, arguments: '' } }] })),
      wrong.map((args) =>
        chunk({ tool_calls: [{ index: 0, id: 'call_w', function: { name: 'frontendThing', arguments: args } }] }),
      ),
      wrong.map((id) => chunk({ content: 'x' }, null, { id })),
      wrong.map((finish) => chunk({}, finish)),
      wrong.map((delta) => chunk(delta)),
      anyJson.map((value) => JSON.stringify(value)),
    ),
  },
);

const openAiPiece: fc.Arbitrary<string | number[]> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .tuple(openAiData, fc.constantFrom('\n\n', '\n\n', '\r\n\r\n', '\n', '\r\r'))
      .map(([data, end]) => `data: ${data}${end}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('error', 'message', 'ping', ''), openAiData)
      .map(([event, data]) => `event: ${event}\ndata: ${data}\n\n`),
  },
  { weight: 1, arbitrary: fc.tuple(openAiData, openAiData).map(([a, b]) => `data: ${a}\ndata: ${b}\n\n`) },
  { weight: 2, arbitrary: fc.tuple(garbageLine, lineEnd).map(([line, end]) => line + end) },
  { weight: 1, arbitrary: randomBytes },
);

/** A Chat Completions stream, mostly ending as a complete answer would, so the run can also succeed. */
export const openAiStreamArb = streamArb(
  openAiPiece,
  'text/event-stream',
  fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([`data: ${chunk({}, 'stop')}\n\n`, 'data: [DONE]\n\n']) },
    { weight: 1, arbitrary: fc.constant<string[]>([`data: ${chunk({}, 'stop')}\n\n`]) },
    { weight: 1, arbitrary: fc.constant<string[]>([]) },
  ),
);

// --- CopilotKit remote endpoints (JSON Lines) ------------------------------------------------------

const ids = fc.constantFrom('m-1', 'm-2', 'c-1', 'c-2');
/** A runtime-event line (the crewai dialect). */
const runtimeEvent = fc.oneof(
  ids.map((messageId) => ({ type: 'TextMessageStart', messageId })),
  fc.record({ messageId: ids, content: text }).map((event) => ({ type: 'TextMessageContent', ...event })),
  ids.map((messageId) => ({ type: 'TextMessageEnd', messageId })),
  fc
    .record({ actionExecutionId: ids, actionName: toolName, parentMessageId: fc.option(ids, { nil: undefined }) })
    .map((event) => ({ type: 'ActionExecutionStart', ...event })),
  fc
    .record({ actionExecutionId: ids, args: fc.oneof(text, fc.constantFrom('{"text":"hi"}', '{', '}')) })
    .map((event) => ({ type: 'ActionExecutionArgs', ...event })),
  ids.map((actionExecutionId) => ({ type: 'ActionExecutionEnd', actionExecutionId })),
  fc
    .record({ actionExecutionId: ids, actionName: toolName, result: fc.oneof(text, anyJson) })
    .map((event) => ({ type: 'ActionExecutionResult', ...event })),
  fc
    .record({
      state: fc.oneof(
        fc.object({ maxDepth: 2 }).map((value) => JSON.stringify(value)),
        invalidJson,
        text,
        wrong,
      ),
      running: fc.oneof(fc.boolean(), wrong),
      active: fc.oneof(fc.boolean(), wrong),
      nodeName: fc.oneof(text, wrong),
    })
    .map((event) => ({
      type: 'AgentStateMessage',
      threadId: 't',
      agentName: 'fuzzCrew',
      runId: 'r',
      role: 'assistant',
      ...event,
    })),
  fc
    .record({
      name: fc.constantFrom('LangGraphInterruptEvent', 'CopilotKitLangGraphInterruptEvent', 'Nope'),
      value: fc.oneof(text, anyJson),
    })
    .map((event) => ({ type: 'MetaEvent', ...event })),
  fc.oneof(text, wrong).map((message) => ({ type: 'RunError', message })),
  fc.constantFrom('Unknown', '', null, 5).map((type) => ({ type })),
  fc.record(
    {
      type: fc.constantFrom(
        'TextMessageStart',
        'TextMessageContent',
        'TextMessageEnd',
        'ActionExecutionStart',
        'ActionExecutionArgs',
        'ActionExecutionEnd',
        'ActionExecutionResult',
        'AgentStateMessage',
        'MetaEvent',
        'RunError',
      ),
      messageId: wrong,
      actionExecutionId: wrong,
      content: wrong,
      args: wrong,
      actionName: wrong,
      result: wrong,
    },
    { requiredKeys: ['type'] },
  ),
);

/** A line of the langgraph dialect (LangGraph events plus CopilotKit's own). */
const langGraphEvent = fc.oneof(
  fc
    .record({
      id: ids,
      content: fc.oneof(text, wrong, fc.constant([{ type: 'text', text: 'hi' }])),
      finish: fc.constantFrom(undefined, 'stop', 'tool_calls'),
    })
    .map(({ id, content, finish }) => ({
      event: 'on_chat_model_stream',
      metadata: { langgraph_node: 'n' },
      data: {
        chunk: { id, content, tool_call_chunks: [], response_metadata: finish ? { finish_reason: finish } : {} },
      },
    })),
  fc
    .record({
      id: ids,
      name: fc.option(toolName, { nil: null }),
      args: fc.oneof(text, fc.constantFrom('{"text":"hi"}')),
      callId: fc.option(ids, { nil: null }),
      index: fc.oneof(fc.nat({ max: 2 }), wrong),
    })
    .map(({ id, name, args, callId, index }) => ({
      event: 'on_chat_model_stream',
      metadata: {},
      data: { chunk: { id, content: '', tool_call_chunks: [{ name, args, id: callId, index }] } },
    })),
  wrong.map((chunkValue) => ({ event: 'on_chat_model_stream', metadata: {}, data: { chunk: chunkValue } })),
  wrong.map((data) => ({ event: 'on_chat_model_stream', data })),
  wrong.map((tcc) => ({
    event: 'on_chat_model_stream',
    data: { chunk: { id: 'm-1', content: '', tool_call_chunks: tcc } },
  })),
  fc
    .record({
      state: fc.oneof(fc.object({ maxDepth: 2 }), wrong),
      active: fc.oneof(fc.boolean(), wrong),
      node_name: fc.oneof(text, wrong),
    })
    .map((event) => ({
      event: 'on_copilotkit_state_sync',
      thread_id: 't',
      run_id: 'r',
      agent_name: 'fuzzGraph',
      running: true,
      role: 'assistant',
      ...event,
    })),
  fc
    .record({
      value: fc.oneof(text, anyJson),
      messages: fc.oneof(fc.constant([{ id: 'i-1', role: 'assistant', content: 'approve?' }]), wrong),
    })
    .map((data) => ({ event: 'on_copilotkit_interrupt', data })),
  fc.oneof(text, anyJson).map((value) => ({ event: 'on_interrupt', value })),
  wrong.map((data) => ({ event: 'on_copilotkit_error', data })),
  fc
    .record({
      name: fc.constantFrom(
        'copilotkit_manually_emit_message',
        'copilotkit_manually_emit_tool_call',
        'copilotkit_manually_emit_intermediate_state',
        'copilotkit_exit',
        'other',
      ),
      data: fc.oneof(
        wrong,
        fc.constant({ message_id: 'mm-1', message: 'hand' }),
        fc.constant({ id: 'mc-1', name: 'echo', args: { text: 'x' } }),
      ),
    })
    .map((event) => ({ event: 'on_custom_event', ...event })),
  fc.constantFrom('on_chain_start', 'on_chat_model_end', 'on_tool_end', '', null).map((event) => ({ event, data: {} })),
);

const jsonlPiece = (event: fc.Arbitrary<unknown>): fc.Arbitrary<string | number[]> =>
  fc.oneof(
    { weight: 10, arbitrary: fc.tuple(event, lineEnd).map(([value, end]) => JSON.stringify(value) + end) },
    { weight: 1, arbitrary: fc.tuple(invalidJson, lineEnd).map(([line, end]) => line + end) },
    { weight: 1, arbitrary: fc.tuple(anyJson, lineEnd).map(([value, end]) => JSON.stringify(value) + end) },
    { weight: 1, arbitrary: fc.tuple(garbageLine, lineEnd).map(([line, end]) => line + end) },
    { weight: 1, arbitrary: fc.constantFrom('\n', '\r\n', '   \n', '\t\n') },
    { weight: 1, arbitrary: randomBytes },
  );

export const crewStreamArb = streamArb(jsonlPiece(runtimeEvent), 'application/jsonl', fc.constant<string[]>([]));
export const graphStreamArb = streamArb(jsonlPiece(langGraphEvent), 'application/jsonl', fc.constant<string[]>([]));

// --- AG-UI agents (SSE) ----------------------------------------------------------------------------

/** An AG-UI event: right (for @ag-ui/core), of the wrong shape, out of order, or unknown. */
const agUiEvent = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ type: 'RUN_STARTED', threadId: 't', runId: 'r' }) },
  { weight: 2, arbitrary: ids.map((messageId) => ({ type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' })) },
  {
    weight: 4,
    arbitrary: fc.record({ messageId: ids, delta: text }).map((event) => ({ type: 'TEXT_MESSAGE_CONTENT', ...event })),
  },
  { weight: 2, arbitrary: ids.map((messageId) => ({ type: 'TEXT_MESSAGE_END', messageId })) },
  {
    weight: 2,
    arbitrary: fc
      .record({ messageId: ids, delta: text, role: fc.constantFrom('assistant', undefined) })
      .map((event) => ({ type: 'TEXT_MESSAGE_CHUNK', ...event })),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ toolCallId: ids, toolCallName: toolName, parentMessageId: fc.option(ids, { nil: undefined }) })
      .map((event) => ({ type: 'TOOL_CALL_START', ...event })),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ toolCallId: ids, delta: fc.oneof(text, fc.constantFrom('{"text":"hi"}', '{')) })
      .map((event) => ({ type: 'TOOL_CALL_ARGS', ...event })),
  },
  { weight: 2, arbitrary: ids.map((toolCallId) => ({ type: 'TOOL_CALL_END', toolCallId })) },
  {
    weight: 1,
    arbitrary: fc
      .record({
        toolCallId: ids,
        toolCallName: fc.option(toolName, { nil: undefined }),
        delta: fc.option(text, { nil: undefined }),
      })
      .map((event) => ({ type: 'TOOL_CALL_CHUNK', ...event })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ messageId: ids, toolCallId: ids, content: text })
      .map((event) => ({ type: 'TOOL_CALL_RESULT', role: 'tool', ...event })),
  },
  {
    weight: 2,
    arbitrary: fc.oneof(fc.object({ maxDepth: 2 }), anyJson).map((snapshot) => ({ type: 'STATE_SNAPSHOT', snapshot })),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.record(
          {
            op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test', 'nope'),
            path: fc.constantFrom(
              '',
              '/',
              '/step',
              '/a/b/c',
              'no-slash',
              '/~2',
              '/notes/-',
              '/__proto__/polluted',
              '/constructor/prototype/polluted',
            ),
            value: anyJson,
            from: fc.constantFrom('/step', '/missing'),
          },
          { requiredKeys: ['op', 'path'] },
        ),
        { maxLength: 3 },
      )
      .map((delta) => ({ type: 'STATE_DELTA', delta })),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.record({
          id: ids,
          role: fc.constantFrom('assistant', 'user', 'tool', 'nope'),
          content: fc.oneof(text, wrong),
        }),
        { maxLength: 3 },
      )
      .map((messages) => ({ type: 'MESSAGES_SNAPSHOT', messages })),
  },
  { weight: 1, arbitrary: fc.constantFrom('plan', '', 'x').map((stepName) => ({ type: 'STEP_STARTED', stepName })) },
  { weight: 1, arbitrary: fc.constantFrom('plan', '', 'x').map((stepName) => ({ type: 'STEP_FINISHED', stepName })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ name: fc.constantFrom('on_interrupt', 'PredictState', 'other'), value: anyJson })
      .map((event) => ({ type: 'CUSTOM', ...event })),
  },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constant(undefined),
        fc.constant({ type: 'success' }),
        fc.constant({ type: 'interrupt', interrupts: [{ id: 'i-1', reason: 'approval' }] }),
        wrong,
      )
      .map((outcome) => ({
        type: 'RUN_FINISHED',
        threadId: 't',
        runId: 'r',
        ...(outcome === undefined ? {} : { outcome }),
      })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ message: fc.oneof(text, wrong), code: fc.option(text, { nil: undefined }) })
      .map((event) => ({ type: 'RUN_ERROR', ...event })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('RAW', 'THINKING_START', 'REASONING_START', 'ACTIVITY_SNAPSHOT', 'NOPE', '', 'run_started')
      .map((type) => ({ type, event: {} })),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        type: fc.constantFrom(
          'TEXT_MESSAGE_START',
          'TEXT_MESSAGE_CONTENT',
          'TOOL_CALL_START',
          'TOOL_CALL_ARGS',
          'STATE_SNAPSHOT',
          'STATE_DELTA',
          'MESSAGES_SNAPSHOT',
          'RUN_FINISHED',
          'RUN_ERROR',
          'CUSTOM',
        ),
        messageId: wrong,
        delta: wrong,
        toolCallId: wrong,
        toolCallName: wrong,
        snapshot: wrong,
        messages: wrong,
        threadId: wrong,
        runId: wrong,
        message: wrong,
      },
      { requiredKeys: ['type'] },
    ),
  },
  { weight: 1, arbitrary: anyJson },
);

const agUiPiece: fc.Arbitrary<string | number[]> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .tuple(agUiEvent, fc.constantFrom('\n\n', '\n\n', '\r\n\r\n', '\n'))
      .map(([event, end]) => `data: ${JSON.stringify(event)}${end}`),
  },
  { weight: 1, arbitrary: invalidJson.map((data) => `data: ${data}\n\n`) },
  { weight: 1, arbitrary: fc.tuple(garbageLine, lineEnd).map(([line, end]) => line + end) },
  { weight: 1, arbitrary: randomBytes },
);

/** An AG-UI stream: usually opened with RUN_STARTED and often closed with RUN_FINISHED, with anything between. */
export const agUiStreamArb = fc
  .record({
    opens: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    stream: streamArb(
      agUiPiece,
      'text/event-stream',
      fc.oneof(
        {
          weight: 2,
          arbitrary: fc.constant<string[]>(['data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n']),
        },
        { weight: 1, arbitrary: fc.constant<string[]>([]) },
      ),
    ),
  })
  .map(({ opens, stream }) => ({
    ...stream,
    pieces: [...(opens ? ['data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'] : []), ...stream.pieces],
  }));
