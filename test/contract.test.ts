import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { CriticalityLevel, diff } from '@graphql-inspector/core';
import {
  AvailableAgentsDocument,
  GenerateCopilotResponseDocument,
  LoadAgentStateDocument,
} from '@copilotkit/runtime-client-gql';
import {
  buildSchema as buildSdl,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isUnionType,
  parse,
  validate,
  type DocumentNode,
  type GraphQLSchema,
} from 'graphql';
import {
  BadRequestError,
  ERROR_CODES,
  GatewayError,
  MethodNotAllowedError,
  ThreadBusyError,
  UnsupportedMediaTypeError,
  type ErrorCode,
} from '../src/core/errors.js';
import { failedRun } from '../src/core/status.js';
import { buildSchema, loadTypeDefs } from '../src/graphql/schema.js';

// The contract: our SDL against a copy of the reference runtime's (1.10.6) SDL, and the stock
// client's own documents against our schema.

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const reference = buildSdl(fixture('reference-runtime-1.10.6.graphql'));
const ours: GraphQLSchema = buildSchema();

describe('the schema contract', () => {
  it('has zero breaking changes against the reference runtime 1.10.6 SDL', async () => {
    const changes = await diff(reference, ours);
    const breaking = changes.filter((change) => change.criticality.level === CriticalityLevel.Breaking);
    expect(breaking.map((change) => change.message)).toEqual([]);
    // The diff is not vacuous: our additions are seen.
    expect(
      changes.some((change) => change.message.includes('copilotRun') || change.message.includes('Subscription')),
    ).toBe(true);
  });

  it('keeps every reference type, field, argument and enum value', () => {
    for (const type of Object.values(reference.getTypeMap())) {
      if (type.name.startsWith('__')) continue;
      const mine = ours.getType(type.name);
      expect(mine?.toString()).toBe(type.name);
      if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
        const theirs = type.getFields();
        const myFields = (mine as typeof type).getFields();
        for (const [name, field] of Object.entries(theirs)) {
          expect(`${type.name}.${name}: ${String(myFields[name]?.type)}`).toBe(
            `${type.name}.${name}: ${String(field.type)}`,
          );
        }
      }
      if (isEnumType(type)) {
        expect((mine as typeof type).getValues().map((v) => v.name)).toEqual(
          expect.arrayContaining(type.getValues().map((v) => v.name)),
        );
      }
      if (isUnionType(type)) {
        expect((mine as typeof type).getTypes().map(String).sort()).toEqual(type.getTypes().map(String).sort());
      }
    }
  });

  it('describes every type, field, argument and enum value', () => {
    const missing: string[] = [];
    for (const type of Object.values(ours.getTypeMap())) {
      if (type.name.startsWith('__') || ['String', 'Boolean', 'Int', 'Float', 'ID'].includes(type.name)) continue;
      if (!type.description) missing.push(type.name);
      if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description) missing.push(`${type.name}.${field.name}`);
          for (const arg of 'args' in field ? field.args : []) {
            if (!arg.description) missing.push(`${type.name}.${field.name}(${arg.name})`);
          }
        }
      }
      if (isEnumType(type)) {
        for (const value of type.getValues()) if (!value.description) missing.push(`${type.name}.${value.name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('declares @defer and @stream', () => {
    expect(ours.getDirective('defer')).toBeDefined();
    expect(ours.getDirective('stream')).toBeDefined();
    expect(loadTypeDefs()).toContain('directive @stream');
  });
});

describe("the stock client's documents", () => {
  const documents: Record<string, DocumentNode> = {
    generateCopilotResponse: GenerateCopilotResponseDocument as DocumentNode,
    availableAgents: AvailableAgentsDocument as DocumentNode,
    loadAgentState: LoadAgentStateDocument as DocumentNode,
  };

  it.each(Object.keys(documents))('validates %s from the installed @copilotkit/runtime-client-gql', (name) => {
    const document = documents[name];
    expect(document.kind).toBe('Document');
    expect(validate(ours, document).map((error) => error.message)).toEqual([]);
  });

  it('validates the exact document captured on the wire (with urql’s __typename fields)', () => {
    const captured = parse(fixture('client-mutation.graphql'));
    expect(validate(ours, captured).map((error) => error.message)).toEqual([]);
  });
});

describe('the error classes', () => {
  it('fix their own code and status; a call site gives neither', () => {
    const method = new MethodNotAllowedError('Method not allowed', 'POST');
    expect([method.code, method.status, method.allow]).toEqual(['BAD_REQUEST', 405, 'POST']);
    const type = new UnsupportedMediaTypeError('Send JSON.');
    expect([type.code, type.status]).toEqual(['BAD_REQUEST', 415]);
    expect(new BadRequestError('bad').status).toBe(400);
    expect(new ThreadBusyError('busy').status).toBe(ERROR_CODES.THREAD_BUSY.status);
  });

  it('keep their class, message, status and cause when given other details', () => {
    const cause = new Error('underneath');
    const error = new MethodNotAllowedError('Method not allowed', 'GET', { cause, details: { a: 1 } });
    const named = error.withDetails({ a: 1, agentName: 'x' });
    expect(named).toBeInstanceOf(MethodNotAllowedError);
    expect(named).toMatchObject({
      message: 'Method not allowed',
      status: 405,
      allow: 'GET',
      name: 'MethodNotAllowedError',
    });
    expect(named.cause).toBe(cause);
    expect(named.stack).toBe(error.stack);
    expect(named.details).toEqual({ a: 1, agentName: 'x' });
    expect(error.details).toEqual({ a: 1 });
  });
});

describe('PROTOCOL.md', () => {
  it('lists every error code of the error table, with its status, severity and visibility, and no other', () => {
    const protocol = readFileSync(new URL('../PROTOCOL.md', import.meta.url), 'utf8');
    const section = protocol.slice(protocol.indexOf('### 5.5 Every code'), protocol.indexOf('## 6. Differences'));
    const documented = new Map<string, string>();
    for (const [, code, status, severity, visibility] of section.matchAll(
      /^\| `([A-Z_]+)` \| (\d{3}) \| (\w+) \| (\w+) \|/gm,
    ))
      documented.set(code, `${status} ${severity} ${visibility}`);
    const table = new Map(
      Object.entries(ERROR_CODES).map(([code, entry]) => [
        code,
        `${entry.status} ${entry.severity} ${entry.visibility}`,
      ]),
    );
    expect([...documented.entries()].sort()).toEqual([...table.entries()].sort());
  });

  it("names, for every code a failed run can carry, the reason the run's status has", () => {
    const protocol = readFileSync(new URL('../PROTOCOL.md', import.meta.url), 'utf8');
    const section = protocol.slice(protocol.indexOf('### 5.5 Every code'), protocol.indexOf('## 6. Differences'));
    const documented: Record<string, string> = {};
    const actual: Record<string, string> = {};
    for (const [, code, where] of section.matchAll(/^\| `([A-Z_]+)` \| \d{3} \| \w+ \| \w+ \| ([^|]*) \|/gm)) {
      const run = /failed run(?: \(`([A-Z_]+)`\))?/i.exec(where);
      if (!run) continue;
      documented[code] = run[1] ?? 'UNKNOWN_ERROR';
      const status = failedRun(new GatewayError(code as ErrorCode, 'a failure'));
      actual[code] = status.code === 'Failed' ? status.reason : status.code;
    }
    expect(Object.keys(documented)).toEqual(
      expect.arrayContaining([
        'SHUTTING_DOWN',
        'RUN_STOPPED',
        'UPSTREAM_STREAM_INTERRUPTED',
        'GUARDRAILS_VALIDATION_FAILED',
      ]),
    );
    expect(documented).toEqual(actual);
    // A run cut by the end of a drain must be asked again: the stock client shows UNKNOWN_ERROR, not the other.
    expect(documented.SHUTTING_DOWN).toBe('UNKNOWN_ERROR');
  });
});
