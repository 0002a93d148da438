import { serverNotifications, settings, shown } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { after, beforeEach, test } from 'node:test';
import { ServerDependencies, ServerManager } from '../common/server';
import { EventEmitter, LogOutputChannel, Uri } from 'vscode';

// A Python that has the "server module": json stands in for ephemeral_context.
const info = { name: 'Ephemeral Context', module: 'json', serverModule: 'json', pipPackage: 'ephemeral-context' };
const managers: ServerManager[] = [];

function manager(overrides: Partial<ServerDependencies> = {}): ServerManager {
    const deps = {
        info,
        channel: { show: () => undefined } as unknown as LogOutputChannel,
        apiKey: async () => 'sk-ant-test',
        onDidChangeApiKey: new EventEmitter<void>().event,
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

test('an API key stored or removed, in this window or another, restarts the server so it gets the key', async () => {
    const keyChanged = new EventEmitter<void>();
    const server = manager({ onDidChangeApiKey: keyChanged.event });
    await server.restart();
    assert.equal(server.state.kind, 'running');
    keyChanged.fire();
    assert.equal(server.state.kind, 'starting');
});

test('requests are refused once a restart is asked for: the old server would forget what they did (a pin)', async () => {
    const server = manager();
    await server.restart();
    await server.request('ephemeralContext/pin', { uri: 'file:///w/a.py' });
    server.requestRestart('settings changed');
    await assert.rejects(server.request('ephemeralContext/pin', { uri: 'file:///w/a.py' }), /server is not running: it is starting/);
});

test('a command run while the server cannot run says why in words', async () => {
    settings.interpreter = ['/nonexistent/python3'];
    const server = manager();
    await server.restart();
    assert.equal(server.state.kind, 'noPython');
    await assert.rejects(server.request('ephemeralContext/pin', { uri: 'file:///w/a.py' }), (error: Error) => {
        assert.equal(error.message, 'The Ephemeral Context server is not running: no usable Python 3.11+ was found.');
        return true;
    });
});

test('usage the old server reports after a restart was asked for is not shown: the status bar keeps saying "starting"', async () => {
    const server = manager();
    await server.restart();
    const usage: unknown[] = [];
    server.onUsage((u) => usage.push(u));
    serverNotifications.get('ephemeralContext/usage')?.({ contextTokens: 10, budget: 100 });
    assert.equal(usage.length, 1);
    server.requestRestart('settings changed');
    serverNotifications.get('ephemeralContext/usage')?.({ contextTokens: 20, budget: 100 });
    assert.equal(usage.length, 1);
});
