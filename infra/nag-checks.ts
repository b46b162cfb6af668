/**
 * cdk-nag's AwsSolutions checks, registered as a validation plugin: a finding that is not
 * acknowledged (nag.ts) stops synth. Apart from hopper-app.ts because cdk-nag is a
 * devDependency: the CLI entry and the tests load it, local mode never does.
 */
import { Validations, type App } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

export function addNagChecks(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
}
