import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { LedgerItem } from '../common/protocol';
import { buildContextTree, kindTitle } from '../model/contextTree';

function item(overrides: Partial<LedgerItem>): LedgerItem {
    return {
        id: 'id0',
        kind: 'file',
        state: 'full',
        tokens: 100,
        uri: null,
        label: 'x',
        version: null,
        pinned: false,
        ...overrides,
    };
}

test('an empty ledger is an empty tree', () => {
    assert.deepEqual(buildContextTree([]), []);
});

test('items are grouped by kind in a fixed order, unknown kinds last', () => {
    const tree = buildContextTree([
        item({ id: 'a', kind: 'tool_result', label: 'search: TODO' }),
        item({ id: 'b', kind: 'zeta_kind', label: 'z' }),
        item({ id: 'c', kind: 'file', label: 'src/app.py' }),
        item({ id: 'd', kind: 'alpha_kind', label: 'a' }),
        item({ id: 'e', kind: 'skill', label: 'pdf' }),
    ]);
    assert.deepEqual(
        tree.map((group) => group.label),
        ['Files', 'Skills', 'Tool results', 'Alpha kind', 'Zeta kind'],
    );
});

test('within a group pinned items come first, then the largest', () => {
    const [files] = buildContextTree([
        item({ id: 'small', label: 'small.py', tokens: 10 }),
        item({ id: 'big', label: 'big.py', tokens: 5000 }),
        item({ id: 'pinned', label: 'pinned.py', tokens: 1, pinned: true }),
    ]);
    assert.deepEqual(
        files.children.map((node) => node.item.id),
        ['pinned', 'big', 'small'],
    );
});

test('a group counts its items and the tokens actually sent', () => {
    const [files] = buildContextTree([
        item({ id: 'a', tokens: 1830 }),
        item({ id: 'b', tokens: 400, state: 'evicted' }),
        // A binary, over-size or demoted file: only its id is sent, as the status bar counts it.
        item({ id: 'c', tokens: 250_000, state: 'reference' }),
    ]);
    assert.equal(files.description, '3 · 1.8k tok');
    const reference = files.children.find((node) => node.item.id === 'c');
    assert.equal(reference?.icon, 'circle-slash');
    assert.match(reference?.tooltip ?? '', /250000 tokens \(not sent; hydratable by id\)/);
});

test('an item node shows state, tokens and pin, and its menu context', () => {
    const [files] = buildContextTree([
        item({
            id: 'f3a9c21b',
            label: 'src/app.py',
            tokens: 1830,
            pinned: true,
            version: 7,
            uri: 'file:///p/src/app.py',
        }),
    ]);
    const node = files.children[0];
    assert.equal(node.label, 'src/app.py');
    assert.equal(node.description, 'full · 1.8k tok · pinned');
    assert.equal(node.contextValue, 'ectx-item pinned hasUri');
    assert.equal(node.icon, 'file');
    assert.ok(node.tooltip.includes('id f3a9c21b · version 7'));
    assert.ok(node.tooltip.includes('file:///p/src/app.py'));
});

test('evicted items get their own icon and say they are hydratable', () => {
    const [group] = buildContextTree([item({ kind: 'tool_result', state: 'evicted', tokens: 0 })]);
    assert.equal(group.children[0].icon, 'circle-slash');
    assert.ok(group.children[0].tooltip.includes('hydratable by id'));
    assert.equal(group.children[0].contextValue, 'ectx-item unpinned');
    assert.doesNotMatch(group.children[0].contextValue, /(^|\s)pinned\b/);
});

test('the view can name items its own way (workspace-relative paths)', () => {
    const [files] = buildContextTree([item({ label: '/ws/src/app.py', uri: 'file:///ws/src/app.py' })], (i) =>
        i.uri ? i.uri.replace('file:///ws/', '') : i.label,
    );
    assert.equal(files.children[0].label, 'src/app.py');
});

test('kind titles are generic for unknown kinds', () => {
    assert.equal(kindTitle('memory'), 'Memories');
    assert.equal(kindTitle('web_page'), 'Web page');
});
