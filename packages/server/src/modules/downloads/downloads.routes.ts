import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Type } from 'typebox';
import type { Config } from '../../config.js';
import { NotFound } from '../../errors.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { DOWNLOADS_DIR } from '../../paths.js';


interface Packed {
  name: string;
  version: string;
  file: string;
  size: number;
  integrity: string;
  /** The other tarballs an install of this one needs (its @guidon dependencies). */
  needs: string[];
}

const Download = Type.Object({
  name: Type.String({ description: 'The npm package, e.g. @guidon/sdk' }),
  version: Type.String(),
  file: Type.String({ description: 'The tarball, served at /downloads/<file>' }),
  url: Type.String({ description: 'Its address under PUBLIC_URL' }),
  size: Type.Integer({ description: 'Bytes' }),
  integrity: Type.String({ description: 'Subresource integrity of the tarball (sha512), as npm records it' }),
  needs: Type.Array(Type.String(), { description: 'The other packages of this list to install with it, in the same npm install' }),
});

/**
 * The client packages of this server's own version, as `npm pack` tarballs, until they are on a
 * registry: `npm install <PUBLIC_URL>/downloads/guidon-engine-<v>.tgz <PUBLIC_URL>/downloads/guidon-sdk-<v>.tgz`
 * (docs/sdk.md). Public, like the code they hold.
 */
export const downloadRoutes: ApiPlugin<{ config: Readonly<Config>; dir?: string }> = async (app, { config, dir = DOWNLOADS_DIR }) => {
  const indexPath = `${dir}index.json`;
  const packed: Packed[] = existsSync(indexPath) ? (JSON.parse(readFileSync(indexPath, 'utf8')) as { packages: Packed[] }).packages : [];
  if (packed.length === 0) app.log.warn({ dir }, 'the client packages are not packed (npm run build): /downloads/ lists none');
  const listing = { packages: packed.map((entry) => ({ ...entry, url: `${config.publicUrl}/downloads/${entry.file}` })) };
  const files = new Set(packed.map((entry) => entry.file));

  app.get('/downloads/', { schema: { tags: ['downloads'], summary: 'The client packages this server serves (npm tarballs)', response: { 200: Type.Object({ packages: Type.Array(Download) }) } } }, async () => listing);
  app.get('/downloads/:file', { schema: { tags: ['downloads'], summary: 'One client package tarball, for npm install <url>', params: Type.Object({ file: Type.String() }) } }, async (request, reply) => {
    const { file } = request.params;
    if (!files.has(file)) throw new NotFound(`No download named ${file}; GET /downloads/ lists them`);
    reply.header('content-type', 'application/gzip');
    reply.header('cache-control', 'no-cache'); // the name keeps its version while a development build changes it
    reply.header('content-disposition', `attachment; filename="${file}"`);
    return reply.send(await readFile(`${dir}${file}`));
  });
};
