// Two Hoppers in one stack, with default props: each takes names of its own (docs/deploy.md).
import { App, Stack } from 'aws-cdk-lib';
import { Hopper } from 'hopper-cdk';

const app = new App();
const stack = new Stack(app, 'TwoHoppers');
new Hopper(stack, 'Reviews', { serviceUrl: 'https://training.example.com' });
new Hopper(stack, 'Tickets', { serviceUrl: 'https://training.example.com', dashboard: false });
app.synth();
