import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // The dashboard's browser modules (served as they are, no build step).
  {
    files: ['web/**/*.js'],
    languageOptions: { globals: Object.fromEntries(['window', 'document', 'location', 'history', 'navigator', 'fetch', 'EventSource', 'Event', 'Node', 'CSS', 'FormData', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'URL'].map((g) => [g, 'readonly'])) },
  },
);
