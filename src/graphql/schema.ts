import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import { ownListResolvers } from './owned-lists.js';
import { resolvers } from './resolvers.js';

const SCHEMA_DIR = fileURLToPath(new URL('../../schema/', import.meta.url));

/** The SDL files of schema/, the contract's source of truth, concatenated in name order. */
export function loadTypeDefs(): string {
  return readdirSync(SCHEMA_DIR)
    .filter((name) => name.endsWith('.graphql'))
    .sort()
    .map((name) => readFileSync(SCHEMA_DIR + name, 'utf8'))
    .join('\n');
}

/**
 * The executable schema: SDL from schema/ with the typed resolvers (those of lists owning them:
 * graphql/owned-lists.ts).
 */
export function buildSchema(): GraphQLSchema {
  return ownListResolvers(makeExecutableSchema({ typeDefs: loadTypeDefs(), resolvers: resolvers as any }));
}
