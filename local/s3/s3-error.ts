/** s3rver's S3 error: thrown in a request, it is answered as S3 answers that error. */
import { createRequire } from 'node:module';

type S3ErrorClass = new (code: string, message: string, detail?: Record<string, string>) => Error;

const require = createRequire(import.meta.url);
export const S3Error = require('s3rver/lib/models/error.js') as S3ErrorClass;
