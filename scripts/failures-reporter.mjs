// A test reporter that runs beside spec (scripts/test.mjs): it appends each failing test's file,
// name and the first line of its error to the file GUIDON_TEST_FAILURES names, so that the end of
// a run can list every failure again. A CI log is often read from its tail, and the spec output of
// the first Node line's failure is then thousands of lines above it.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* failures(source) {
  const into = process.env.GUIDON_TEST_FAILURES;
  for await (const event of source) {
    if (event.type !== 'test:fail' || !into) continue;
    const { name, details, file } = event.data;
    const error = details?.error;
    if (error?.failureType === 'subtestsFailed') continue; // a suite, failing with its tests (listed themselves)
    const message = String(error?.cause?.message ?? error?.message ?? error ?? '').split('\n')[0];
    appendFileSync(into, `${file ? `${relative(process.cwd(), file)}: ` : ''}${name}: ${message}\n`);
  }
}
