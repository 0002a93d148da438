import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { enclosingSymbolPath, selectedIdentifier, SymbolLike } from '../model/symbols';

const r = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

const symbols: SymbolLike[] = [
    { name: 'helper', range: r(0, 0, 2, 0), children: [] },
    {
        name: 'App',
        range: r(4, 0, 20, 0),
        children: [
            { name: 'run', range: r(6, 4, 10, 0), children: [] },
            { name: 'stop', range: r(12, 4, 15, 0), children: [] },
        ],
    },
];

test('the innermost enclosing symbol is named with its parents', () => {
    assert.equal(enclosingSymbolPath(symbols, r(7, 8, 8, 2)), 'App.run');
    assert.equal(enclosingSymbolPath(symbols, r(11, 0, 11, 3)), 'App');
    assert.equal(enclosingSymbolPath(symbols, r(1, 0, 1, 5)), 'helper');
});

test('a selection spanning two symbols names their common parent, or nothing at top level', () => {
    assert.equal(enclosingSymbolPath(symbols, r(7, 0, 13, 0)), 'App');
    assert.equal(enclosingSymbolPath(symbols, r(1, 0, 5, 0)), undefined);
});

test('a selected identifier names the symbol directly', () => {
    assert.equal(selectedIdentifier(' App.run '), 'App.run');
    assert.equal(selectedIdentifier('x = 1'), undefined);
    assert.equal(selectedIdentifier(''), undefined);
});
