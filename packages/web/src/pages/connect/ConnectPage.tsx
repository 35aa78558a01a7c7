import { useState } from 'react';
import { useParams } from 'react-router';
import { useDownloads, useEnvironments, useProject } from '../../api/queries';
import { CopyButton } from '../../components/CopyButton';
import { ErrorState, Loading } from '../../components/States';

/** Copy-paste snippets (SDK, curl, fetch) with the project's key and an environment filled in. */
export function ConnectPage() {
  const { projectId = '' } = useParams();
  const project = useProject(projectId);
  const environments = useEnvironments(projectId);
  const downloads = useDownloads();
  const [environment, setEnvironment] = useState('');
  if (project.isPending || environments.isPending) return <Loading what="the project" />;
  if (project.error || environments.error || !project.data) return <ErrorState error={project.error ?? environments.error} />;
  const envKey = environment || environments.data?.[0]?.key || 'production';
  const base = window.location.origin;
  const key = project.data.sdk_key;
  // Until the packages are on a registry, npm installs them from this server, with the @guidon
  // packages they need (docs/sdk.md); the registry's line is the one for later.
  const install = (name: string, requirement: string) => {
    const served = downloads.data?.packages ?? [];
    const entry = served.find((candidate) => candidate.name === name);
    const files = entry ? [...entry.needs, name].map((needed) => served.find((candidate) => candidate.name === needed)?.file) : [];
    if (files.length === 0 || !files.every(Boolean)) return `// npm install ${name}   (${requirement})`;
    return `// Install (${requirement}) from this server:\n//   npm install ${files.map((file) => `${base}/downloads/${file}`).join(' ')}\n// or, once it is published, from the npm registry: npm install ${name}`;
  };
  const snippets = [
    {
      name: 'TypeScript SDK (@guidon/sdk)',
      code: `${install('@guidon/sdk', 'Node 20+ and browsers; docs/sdk.md')}
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
      name: 'Local evaluation on a server (@guidon/sdk)',
      code: `${install('@guidon/sdk', 'Node 20+; docs/local-evaluation.md')}
// Evaluates in your process, in microseconds, from the environment's rules (kept fresh by a stream).
// It needs an API token of this project (Account → API tokens, any role), not the SDK key:
// the rules name users, so keep the token on your servers.
import { createClient } from '@guidon/sdk';

const guidon = createClient({
  baseUrl: '${base}',
  apiToken: process.env.GUIDON_API_TOKEN, // gdn_…
  environment: '${envKey}',
  mode: 'local',
});
await guidon.ready(); // true once it holds the rules; never rejects

const flags = guidon.evaluate({ user_id: 'user-42', user_email: 'ada@example.com' }); // synchronous
if (flags.isEnabled('new_checkout')) {
  // show the new checkout
}
process.on('SIGTERM', () => guidon.close()); // sends the last usage counts`,
    },
    {
      name: 'OpenFeature in Go, Java, Python or .NET (OFREP)',
      code: `# Guidon speaks OFREP: the stock OpenFeature OFREP provider of each language works unmodified.
# Base URL: ${base}   SDK key header: X-API-Key: ${key}   Environment header: X-Environment: ${envKey}
# Context: targetingKey is the user id, "email" the user's email, other fields custom attributes.

# Go:      go get github.com/open-feature/go-sdk github.com/open-feature/go-sdk-contrib/providers/ofrep
provider := ofrep.NewProvider("${base}", ofrep.WithApiKeyAuth("${key}"), ofrep.WithHeader("X-Environment", "${envKey}"))
openfeature.SetProviderAndWait(provider)

# Java:    dev.openfeature:sdk and dev.openfeature.contrib.providers:ofrep (Maven / Gradle)
OfrepProvider provider = OfrepProvider.constructProvider(OfrepProviderOptions.builder()
    .baseUrl("${base}")
    .headers(ImmutableMap.of("X-API-Key", ImmutableList.of("${key}"), "X-Environment", ImmutableList.of("${envKey}")))
    .build());
OpenFeatureAPI.getInstance().setProviderAndWait(provider);

# Python:  pip install openfeature-sdk openfeature-provider-ofrep
api.set_provider(OFREPProvider("${base}", headers_factory=lambda: {"X-API-Key": "${key}", "X-Environment": "${envKey}"}))

# .NET:    dotnet add package OpenFeature && dotnet add package OpenFeature.Providers.Ofrep
var options = new OfrepOptions("${base}") { Headers = new() { ["X-API-Key"] = "${key}", ["X-Environment"] = "${envKey}" } };
await Api.Instance.SetProviderAsync(new OfrepProvider(options));`,
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
        <p className="muted">Your app asks for every flag of an environment in one call, with the project's SDK key. Keep the key on your servers or in trusted clients; rotate it in Settings if it leaks. A server that checks flags on every request can instead hold the rules and evaluate locally, with an API token.</p>
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
