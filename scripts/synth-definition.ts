/**
 * Prints the definition local mode runs as JSON (scripts/build.mjs writes it to
 * dist/definition.json): the state machine synthesized from the construct, with the handler
 * bundle of each Task state.
 */
import { synthesizeLocalDefinition } from '../infra/local-definition.js';

process.stdout.write(`${JSON.stringify(synthesizeLocalDefinition(), null, 1)}\n`);
