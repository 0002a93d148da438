import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { describeToolUse, parseToExtension } from '../webview/messages';

test('reads of files and symbols are listed with their paths', () => {
    assert.deepEqual(describeToolUse('read_file', { path: 'src/app.py' }), { kind: 'file', label: 'src/app.py', path: 'src/app.py' });
    assert.deepEqual(describeToolUse('read_file', { path: 'a.py', offset: 10, limit: 5 }), {
        kind: 'file',
        label: 'a.py (from 10, 5)',
        path: 'a.py',
    });
    assert.deepEqual(describeToolUse('read_symbol', { path: 'src/app.py', symbol: 'App.run' }), {
        kind: 'symbol',
        label: 'src/app.py::App.run',
        path: 'src/app.py',
    });
    assert.equal(describeToolUse('outline', { path: 'b.ts' })?.label, 'outline of b.ts');
});

test('searches, stored ids and unknown tools are described; edits and malformed input are not reads', () => {
    assert.equal(describeToolUse('search', { pattern: 'TODO', path_glob: '*.py' })?.label, 'search "TODO" in *.py');
    assert.equal(describeToolUse('read_session_file', { id: 'f3a9c21b' })?.label, 'stored f3a9c21b');
    assert.equal(describeToolUse('memory', { command: 'view' })?.label, 'memory');
    assert.equal(describeToolUse('edit_file', { path: 'a.py' }), undefined);
    assert.equal(describeToolUse('read_file', { path: 42 }), undefined);
});

test('webview messages of the known shapes pass, with no extra fields; others are dropped', () => {
    assert.deepEqual(parseToExtension({ type: 'ask', prompt: 'why?', extra: 1 }), { type: 'ask', prompt: 'why?' });
    assert.deepEqual(parseToExtension({ type: 'openUri', uri: 'file:///a%20b/%23x.py' }), { type: 'openUri', uri: 'file:///a%20b/%23x.py' });
    assert.deepEqual(parseToExtension({ type: 'cancel' }), { type: 'cancel' });
    for (const bad of [null, 'ask', 42, {}, { type: 'ask' }, { type: 'ask', prompt: 7 }, { type: 'openUri', uri: '' }, { type: 'eval', code: 'x' }]) {
        assert.equal(parseToExtension(bad), undefined, JSON.stringify(bad));
    }
});
