/**
 * `cdk synth` / `cdk deploy` entry (cdk.json: `npx tsx infra/app.ts`). Settings come from
 * context: `npx cdk deploy -c serviceUrl=https://... [-c apiKeySecretName=...]`; docs/deploy.md.
 */
import { createHopperApp } from './hopper-app.js';
import { addNagChecks } from './nag-checks.js';

const { app } = createHopperApp();
addNagChecks(app);
app.synth();
