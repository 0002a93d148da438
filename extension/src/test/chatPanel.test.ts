import { panels } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { EventEmitter, Uri } from 'vscode';
import { ServerManager } from '../common/server';
import { ServerState } from '../model/statusText';
import { ChatPanel } from '../webview/chatPanel';

test('while the server is being installed the Ask Claude panel says so, not that Python or the package is missing', async () => {
    const state: ServerState = { kind: 'installing' };
    const server = { state, onAskProgress: new EventEmitter().event, onState: new EventEmitter().event } as unknown as ServerManager;
    ChatPanel.createOrShow({
        extensionUri: Uri.file('/ext'),
        server,
        hasApiKey: async () => true,
        onDidChangeApiKey: new EventEmitter<void>().event,
    });
    const panel = panels.at(-1)!;
    panel.receive({ type: 'ready' });
    await new Promise(setImmediate);
    assert.deepEqual(panel.posted, [
        { type: 'state', hasApiKey: true, serverRunning: false, serverMessage: 'The Ephemeral Context server is not running: it is being installed.' },
    ]);
});
