import { useState } from 'react';
import { useParams } from 'react-router';
import { useEnvironments, useProject } from '../../api/queries';
import { CopyButton } from '../../components/CopyButton';
import { ErrorState, Loading } from '../../components/States';

/** Copy-paste snippets (SDK, curl, fetch) with the project's key and an environment filled in. */
export function ConnectPage() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  const environments = useEnvironments(projectId);
  const [environment, setEnvironment] = useState('');
  if (project.isPending || environments.isPending) return <Loading what="the project" />;
  if (project.error || environments.error || !project.data) return <ErrorState error={project.error ?? environments.error} />;
  const envKey = environment || environments.data?.[0]?.key || 'production';
  const base = window.location.origin;
  const key = project.data.sdk_key;
  const snippets = [
    {
      name: 'TypeScript SDK (@guidon/sdk)',
      code: `// npm install @guidon/sdk   (Node 20+ and browsers; docs/sdk.md)
import { createClient } from '@guidon/sdk';

const guidon = createClient({ baseUrl: '${base}', sdkKey: '${key}', environment: '${envKey}' });
await guidon.ready(); // never rejects: until Guidon answers, every flag reads false

// On a server: one view per user (cached, refreshed when a flag changes).
const flags = await guidon.forContext({ user_id: 'user-42', user_email: 'ada@example.com' });
if (flags.isEnabled('new_checkout')) {
  // show the new checkout
}
guidon.on('change', ({ keys }) => console.log('changed:', keys)); // streamed updates`,
    },
    {
      name: 'curl',
      code: `curl -s -X POST ${base}/sdk/v1/evaluate \\\n  -H 'x-sdk-key: ${key}' -H 'content-type: application/json' \\\n  -d '{"environment":"${envKey}","context":{"user_id":"user-42","user_email":"ada@example.com"}}'`,
    },
    {
      name: 'fetch (JavaScript)',
      code: `const answer = await fetch('${base}/sdk/v1/evaluate', {
  method: 'POST',
  headers: { 'x-sdk-key': '${key}', 'content-type': 'application/json' },
  body: JSON.stringify({ environment: '${envKey}', context: { user_id: 'user-42', user_email: 'ada@example.com' } }),
});
// On any answer other than 200, treat every flag as off.
const { flags } = answer.ok ? await answer.json() : { flags: {} };
if (flags.new_checkout?.enabled) {
  // show the new checkout
}`,
    },
  ];
  return (
    <div className="stack">
      <section className="panel">
        <h2>Connect an app</h2>
        <p className="muted">Your app asks for every flag of an environment in one call, with the project's SDK key. Keep the key on your servers or in trusted clients; rotate it in Settings if it leaks.</p>
        <div className="field narrow">
          <label htmlFor="connect-env">Environment</label>
          <select id="connect-env" value={envKey} onChange={(event) => setEnvironment(event.target.value)}>
            {(environments.data ?? []).map((env) => (
              <option key={env.id} value={env.key}>
                {env.name}
              </option>
            ))}
          </select>
        </div>
      </section>
      {snippets.map((snippet) => (
        <section className="panel" key={snippet.name}>
          <div className="page-head">
            <h3>{snippet.name}</h3>
            <div>
              <CopyButton text={snippet.code} label={`Copy the ${snippet.name} snippet`} />
            </div>
          </div>
          <pre className="code" tabIndex={0} aria-label={`${snippet.name} snippet`}>
            <code>{snippet.code}</code>
          </pre>
        </section>
      ))}
    </div>
  );
}
