/** What the evaluate benchmarks share: an HTTP call to the API, and the project they load. */

export async function call(url: string, method: string, path: string, token: string | null, body?: unknown): Promise<any> {
  const response = await fetch(url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** One project, `count` flags: a quarter off, on, 50% rollout, and on with user_id/email/domain rules. */
export async function seed(url: string, count: number): Promise<string> {
  const credentials = { email: 'bench@example.com', password: 'benchmark password' };
  await call(url, 'POST', '/auth/register', null, credentials);
  const { token } = await call(url, 'POST', '/auth/login', null, credentials);
  const project = await call(url, 'POST', '/api/projects', token, { name: 'Bench' });
  const environments = await call(url, 'GET', `/api/projects/${project.id}/environments`, token);
  const production = environments.find((env: { key: string }) => env.key === 'production');
  const flags = `/api/projects/${project.id}/environments/${production.id}/flags`;
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    const flag = await call(url, 'POST', flags, token, {
      name: `Flag ${i}`,
      key: `flag_${i}`,
      enabled: kind !== 0,
      rollout_percentage: kind === 2 ? 50 : 0,
    });
    if (kind === 3) {
      const rules = `${flags}/${flag.id}/rules`;
      await call(url, 'POST', rules, token, { rule_type: 'user_id', rule_value: `vip-${i}`, priority: 2 });
      await call(url, 'POST', rules, token, { rule_type: 'user_email', rule_value: `ceo-${i}@example.com`, priority: 1 });
      await call(url, 'POST', rules, token, { rule_type: 'email_domain', rule_value: `partner-${i}.com` });
    }
  }
  return project.sdk_key;
}
