import { ResponseError, shown } from './fakeVscode'; // first: it fakes `vscode` for the imports below
import { strict as assert } from 'node:assert';
import { beforeEach, test } from 'node:test';
import { safely } from '../commands';

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
