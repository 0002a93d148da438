import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { Usage } from '../common/protocol';
import { budgetLevel, formatServerState, formatUsage } from '../model/statusText';

const usage: Usage = {
    contextTokens: 48210,
    budget: 150000,
    cacheHitRate: 0.87,
    savedTokens: 120400,
    savedUsd: 0.36,
    breakdown: { full: 31200, partial: 9800, synopsis: 1210, evicted: 40500 },
    lastCall: { cacheRead: 41000, cacheWrite: 2100, input: 310, output: 512 },
};

test('the status text shows tokens/budget, hit rate and dollars saved', () => {
    const status = formatUsage(usage, 0.9);
    assert.equal(status.text, '$(layers) 48.2k/150k · 87% cached · $0.36 saved');
    assert.equal(status.level, 'normal');
});

test('the tooltip breaks the context down and reports the last call', () => {
    const { tooltip } = formatUsage(usage, 0.9);
    for (const line of [
        '| files in full | 31.2k |',
        '| partial (synopsis + symbols) | 9.8k |',
        '| synopsis only | 1.2k |',
        '| evicted (not sent, hydratable) | 40.5k |',
        'Last call: 41k cache read, 2.1k cache write, 310 input, 512 output.',
        '(32% of the budget)',
    ]) {
        assert.ok(tooltip.includes(line), `tooltip lacks ${JSON.stringify(line)}:\n${tooltip}`);
    }
});

test('before the first model call the tooltip says so', () => {
    const { tooltip, text } = formatUsage({ ...usage, lastCall: null, cacheHitRate: 0, savedUsd: 0 }, 0.9);
    assert.ok(tooltip.includes('No model call yet.'));
    assert.ok(text.endsWith('0% cached · $0.00 saved'));
});

test('a short session that cost more than re-sending every read shows a negative saving, signed', () => {
    const { text, tooltip } = formatUsage({ ...usage, savedTokens: -1200, savedUsd: -0.05 }, 0.9);
    assert.ok(text.endsWith('· -$0.05 saved'), text);
    assert.ok(tooltip.includes('saved -1.2k tokens (-$0.05)'), tooltip);
});

test('the colour turns to warning near the budget and to error past it', () => {
    assert.equal(budgetLevel(134_999, 150_000, 0.9), 'normal');
    assert.equal(budgetLevel(135_000, 150_000, 0.9), 'warning');
    assert.equal(budgetLevel(150_000, 150_000, 0.9), 'warning');
    assert.equal(budgetLevel(150_001, 150_000, 0.9), 'error');
    assert.equal(budgetLevel(10, 0, 0.9), 'normal');
    assert.equal(formatUsage({ ...usage, contextTokens: 140_000 }, 0.9).level, 'warning');
});

test('server states have their own text until usage arrives', () => {
    assert.equal(formatServerState({ kind: 'running' }).text, '$(layers) Context');
    assert.equal(formatServerState({ kind: 'starting' }).text, '$(sync~spin) Context');
    assert.equal(formatServerState({ kind: 'noPython' }).level, 'error');
    assert.equal(formatServerState({ kind: 'missingPackage' }).level, 'warning');
    assert.equal(formatServerState({ kind: 'installing' }).text, '$(sync~spin) Context: installing the server');
    const crashed = formatServerState({ kind: 'crashed', restartInMs: 4000, crashes: 3 });
    assert.equal(crashed.text, '$(warning) Context: restarting');
    assert.ok(crashed.tooltip.includes('3 in a row'));
    assert.ok(crashed.tooltip.includes('restarting in 4 s'));
});
