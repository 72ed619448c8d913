import { ConfigurationError } from '../core/errors.js';

// How `npm start`'s environment variables are read (src/env.ts and its readers): each error names the variable.

/** A true/false variable: unset or empty is false. */
export function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const value = env[name]?.trim().toLowerCase();
  if (!value || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new ConfigurationError(`${name} must be true or false (got ${JSON.stringify(env[name])}).`);
}

/** `{ [name]: value }` when the value is set, else nothing: for spreading into the settings. */
export function optional<K extends string>(name: K, value: number | undefined): { [key in K]?: number } {
  return (value === undefined ? {} : { [name]: value }) as { [key in K]?: number };
}

/** A whole number, 0 allowed; undefined when unset or empty. */
export function countOf(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0)
    throw new ConfigurationError(`${name} must be a whole number, 0 or more (got ${JSON.stringify(value)}).`);
  return number;
}

export function milliseconds(env: NodeJS.ProcessEnv, name: string): number | undefined {
  return wholeNumber(env, name, 'milliseconds');
}

/** A positive whole number, or undefined when the variable is unset or empty. */
export function wholeNumber(env: NodeJS.ProcessEnv, name: string, unit: string): number | undefined {
  const value = env[name];
  if (!value) return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new ConfigurationError(
      `${name} must be a whole number of ${unit}, 1 or more (got ${JSON.stringify(value)}).`,
    );
  }
  return number;
}

export function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}
