// The module hooks of record-loads.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';

export async function load(url, context, nextLoad) {
  if (process.env.RECORD_LOADS) appendFileSync(process.env.RECORD_LOADS, `${url}\n`);
  return nextLoad(url, context);
}
