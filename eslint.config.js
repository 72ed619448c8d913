// npm run lint: typescript-eslint's recommended rules over src/, test/, scripts/ and bench/, with the house's few
// choices below; formatting is Prettier's (.prettierrc.json), checked by the same script.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/', 'generated/', 'node_modules/', 'bench/reference/', 'test/browser/', 'explorer/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // Unused names are mistakes, but an argument kept for an interface's shape may start with "_".
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // GraphQL's and the executors' own types use `any` at their edges; ours say where with a comment.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      // Prettier wraps code at 120; comments and strings it leaves alone, so this holds them to it too.
      'max-len': ['error', { code: 120, ignoreUrls: true, ignoreRegExpLiterals: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
);
