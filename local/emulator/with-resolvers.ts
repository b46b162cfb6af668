/**
 * Promise.withResolvers for Node 20: aws-local-stepfunctions (which declares Node >= 22) calls
 * it, and Node 20 lacks it. Import this module before aws-local-stepfunctions; on Node 22+ it
 * does nothing. Its withResolvers serves local mode's own code on either.
 */

interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const promiseConstructor = Promise as unknown as { withResolvers?: <T>() => Resolvers<T> };

export function withResolvers<T>(): Resolvers<T> {
  let resolve!: Resolvers<T>['resolve'];
  let reject!: Resolvers<T>['reject'];
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

promiseConstructor.withResolvers ??= withResolvers;
