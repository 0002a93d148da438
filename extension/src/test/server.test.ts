import { settings, shown } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { after, beforeEach, test } from 'node:test';
import { ServerDependencies, ServerManager } from '../common/server';
import { LogOutputChannel, Uri } from 'vscode';

// A Python that has the "server module": json stands in for ephemeral_context.
const info = { name: 'Ephemeral Context', module: 'json', pipPackage: 'ephemeral-context' };
const managers: ServerManager[] = [];

function manager(overrides: Partial<ServerDependencies> = {}): ServerManager {
    const deps = {
        info,
        channel: { show: () => undefined } as unknown as LogOutputChannel,
        apiKey: async () => 'sk-ant-test',
        storageDir: Uri.file('/tmp/ectx-test-storage'),
        ...overrides,
    } as ServerDependencies;
    const server = new ServerManager(deps);
    managers.push(server);
    return server;
}

beforeEach(() => {
    Object.assign(settings, { interpreter: ['python3'], serverPackageSpec: '', limits: {}, secretPatterns: [], allowSecretFiles: [] });
    shown.length = 0;
});

after(async () => {
    await Promise.all(managers.map((server) => server.dispose()));
});

test('a start that fails before the process runs (the key store cannot be read) is reported and retried, never stuck at "starting"', async () => {
    const server = manager({ apiKey: () => Promise.reject(new Error('no keyring')) });
    await server.restart();
    assert.equal(server.state.kind, 'crashed');
    assert.match(shown.join('\n'), /no keyring/);
});
