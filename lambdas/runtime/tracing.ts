/**
 * X-Ray subsegments around what a step does (Powertools Tracer): the invocation as a whole
 * (`## <step>`, annotated with cold start, service and run) and each training service call
 * (`### service.<method>`). The service client itself knows nothing of tracing; the runtime
 * hands steps a traced view of it. Without an enabled tracer (local mode, tests) every function
 * here just runs the work.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';

/** Runs `work` in a subsegment `name` that becomes the current segment while it runs. */
export async function inSubsegment<T>(
  tracer: Tracer | undefined,
  name: string,
  annotations: Readonly<Record<string, string>>,
  work: () => Promise<T>,
): Promise<T> {
  if (tracer === undefined || !tracer.isTracingEnabled()) return work();
  const parent = tracer.getSegment();
  if (parent === undefined) return work();
  const subsegment = parent.addNewSubsegment(name);
  tracer.setSegment(subsegment);
  tracer.annotateColdStart();
  tracer.addServiceNameAnnotation();
  for (const [key, value] of Object.entries(annotations)) tracer.putAnnotation(key, value);
  try {
    return await work();
  } catch (error) {
    tracer.addErrorAsMetadata(error as Error);
    throw error;
  } finally {
    subsegment.close();
    tracer.setSegment(parent);
  }
}

/**
 * `client` with each method call timed in its own subsegment `<prefix>.<method>` (closed when a
 * returned promise settles). Methods run on the client itself, so its private fields keep working.
 */
export function tracedClient<T extends object>(client: T, tracer: Tracer | undefined, prefix: string): T {
  if (tracer === undefined || !tracer.isTracingEnabled()) return client;
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (typeof property !== 'string' || property === 'close') return method.bind(target);
      return (...args: unknown[]) =>
        traceCall(tracer, `${prefix}.${property}`, () => method.apply(target, args));
    },
  });
}

function traceCall(tracer: Tracer, name: string, call: () => unknown): unknown {
  const parent = tracer.getSegment();
  if (parent === undefined) return call();
  const subsegment = parent.addNewSubsegment(name);
  const close = (error?: unknown): void => {
    if (error !== undefined) subsegment.addError(error as Error, true);
    subsegment.close();
  };
  let result: unknown;
  try {
    result = call();
  } catch (error) {
    close(error);
    throw error;
  }
  // The client's methods are async: a call returns a native promise, or (a list, a download) none.
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        close();
        return value;
      },
      (error: unknown) => {
        close(error);
        throw error;
      },
    );
  }
  close();
  return result;
}
