// @ts-check
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', 'out/', 'coverage/', '.scratch/', 'dist/', 'test/consumers/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: globals.node },
  },
  {
    // The console's page runs in the browser, with dagre's bundle loaded as a global.
    files: ['local/console/page/**/*.js'],
    languageOptions: { globals: { ...globals.browser, dagre: 'readonly' } },
  },
  {
    files: ['test/**/*.ts', 'testkit/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // Tests assert on shapes they have just checked; non-null assertions keep them readable.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  prettier,
);
