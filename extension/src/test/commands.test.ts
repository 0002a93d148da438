import { registeredCommands, ResponseError, shown } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import { Uri } from 'vscode';
import { CommandDependencies, registerCommands, safely } from '../commands';

beforeEach(() => {
    shown.length = 0;
});

test('a command the user cancelled (Cancel on the replay progress) shows no error', async () => {
    await safely('replay', async () => {
        throw new ResponseError(-32800, 'Request cancelled');
    })();
    assert.deepEqual(shown, []);
});

test('a command that fails shows one message with the reason, never a stack', async () => {
    await safely('pin', async () => {
        throw new ResponseError(-32602, 'a.bin is binary');
    })();
    assert.deepEqual(shown, ['Ephemeral Context: a.bin is binary']);
});

test('Add to Context on several files selected in the Explorer pins every one of them', async () => {
    const pinned: unknown[] = [];
    const server = {
        request: async (_method: string, params: unknown) => {
            pinned.push(params);
            return { item: { id: 'f1', label: 'a.py', state: 'full', tokens: 10 } };
        },
    };
    const context = { subscriptions: [], extensionUri: Uri.file('/ext') };
    registerCommands({ context, server, tree: { refresh: async () => undefined } } as unknown as CommandDependencies);
    const first = Uri.file('/w/my file#1.py');
    const second = Uri.file('/w/naïve 100%.py');
    await registeredCommands.get('ephemeralContext.addToContext')?.(first, [first, second]);
    assert.deepEqual(pinned, [{ uri: first.toString() }, { uri: second.toString() }]);
    assert.deepEqual(shown, []);
});

test('a refused file among several does not stop the others, and the refusals are told together', async () => {
    const pinned: unknown[] = [];
    const server = {
        request: async (_method: string, params: { uri: string }) => {
            if (params.uri.endsWith('.env')) {
                throw new ResponseError(-32602, 'matches the secret pattern .env*');
            }
            pinned.push(params);
            return { item: { id: 'f1', label: 'a.py', state: 'full', tokens: 10 } };
        },
    };
    registerCommands({ context: { subscriptions: [] }, server, tree: { refresh: async () => undefined } } as unknown as CommandDependencies);
    const files = [Uri.file('/w/.env'), Uri.file('/w/a.py')];
    await registeredCommands.get('ephemeralContext.addToContext')?.(files[0], files);
    assert.deepEqual(pinned, [{ uri: files[1].toString() }]);
    assert.deepEqual(shown, ['Ephemeral Context: 1 of 2 files were not added. .env: matches the secret pattern .env*']);
});

test('Drop with nothing in the context says so instead of offering an empty list', async () => {
    const server = { state: { kind: 'running' }, request: async () => ({ dropped: [] }) };
    registerCommands({ context: { subscriptions: [] }, server, tree: { snapshot: [] } } as unknown as CommandDependencies);
    await registeredCommands.get('ephemeralContext.drop')?.();
    assert.deepEqual(shown, ['The context is empty: there is nothing to drop.']);
    shown.length = 0;
    server.state = { kind: 'starting' };
    await registeredCommands.get('ephemeralContext.drop')?.();
    assert.deepEqual(shown, ['Ephemeral Context: The Ephemeral Context server is not running: it is starting.']);
});
