import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { formatRate, formatTokens, formatUsd } from '../model/format';

test('formatTokens picks a short unit', () => {
    const cases: [number, string][] = [
        [0, '0'],
        [950, '950'],
        [1000, '1k'],
        [1830, '1.8k'],
        [48210, '48.2k'],
        [99_999, '100k'],
        [150_000, '150k'],
        [1_234_567, '1.23M'],
        // Rounding that carries into the next unit takes that unit (a 1M budget nearly full).
        [999_700, '1M'],
        [999_996_000, '1B'],
        [2_500_000_000, '2.5B'],
        [-5, '0'],
    ];
    for (const [tokens, expected] of cases) {
        assert.equal(formatTokens(tokens), expected, `formatTokens(${tokens})`);
    }
});

test('formatUsd keeps cents, and one significant digit below a cent', () => {
    assert.equal(formatUsd(0), '$0.00');
    assert.equal(formatUsd(0.36), '$0.36');
    assert.equal(formatUsd(12.5), '$12.50');
    assert.equal(formatUsd(0.004), '$0.004');
});

test('formatRate clamps to 0..100%', () => {
    assert.equal(formatRate(0.873), '87%');
    assert.equal(formatRate(1.2), '100%');
    assert.equal(formatRate(-1), '0%');
});
