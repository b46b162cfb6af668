import { fileURLToPath } from 'node:url';
export const RECORDED_CALLS_FILE = fileURLToPath(new URL('./recorded-calls.json', import.meta.url));
