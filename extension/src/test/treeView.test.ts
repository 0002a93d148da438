import { workspaceFoldersChanged } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { EventEmitter } from 'vscode';
import { ServerManager } from '../common/server';
import { ContextTreeProvider } from '../treeView';

test('a workspace folder added or removed fetches the items again (labels and what is inside the folders change)', async () => {
    const requests: string[] = [];
    const server = {
        onUsage: new EventEmitter<unknown>().event,
        onState: new EventEmitter<unknown>().event,
        request: async (method: string) => {
            requests.push(method);
            return { items: [] };
        },
    } as unknown as ServerManager;
    const tree = new ContextTreeProvider(server);
    workspaceFoldersChanged.fire({ added: [{}], removed: [] });
    await new Promise(setImmediate);
    assert.deepEqual(requests, ['ephemeralContext/items']);
    tree.dispose();
});
