/**
 * GetBucketNotificationConfiguration, which s3rver answers NotImplemented: the local S3's buckets
 * send EventBridge events when local mode delivers them (local/emulator/s3-events.ts), and say so
 * as S3 does, with an `<EventBridgeConfiguration/>` element; `hopper doctor` asks it.
 */
import type S3rver from 's3rver';

/** The part of s3rver's (Koa) request context the middleware uses. */
interface RequestContext {
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string | string[] | undefined>>;
  status: number;
  body?: unknown;
}
type Middleware = (context: RequestContext, next: () => Promise<void>) => Promise<void>;

/** S3's XML namespace. */
const S3_NAMESPACE = 'http://s3.amazonaws.com/doc/2006-03-01/';

/** `GET /<bucket>?notification` answered: EventBridge's element when `eventBridge`, else none. */
export function answerNotificationConfiguration(server: S3rver, eventBridge: boolean): void {
  const middleware: Middleware = (context, next) => {
    const bucketOnly = /^\/[^/]+\/?$/.test(context.path);
    if (context.method !== 'GET' || !bucketOnly || context.query.notification === undefined) return next();
    // s3rver writes a plain object as XML (its `@` key holds the attributes).
    context.status = 200;
    context.body = {
      NotificationConfiguration: {
        '@': { xmlns: S3_NAMESPACE },
        ...(eventBridge ? { EventBridgeConfiguration: '' } : {}),
      },
    };
    return Promise.resolve();
  };
  // Just before s3rver's routes (the last middleware), after its XML writer and its error answers.
  (server as unknown as { middleware: Middleware[] }).middleware.splice(-1, 0, middleware);
}
