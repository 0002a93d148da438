import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { normalizeAskResult, normalizeItem, normalizeUsage } from '../model/normalize';
import { formatUsage } from '../model/statusText';

test('omitted zeros and a missing lastCall become whole objects', () => {
    // What the server really sent: `output` (0) and `lastCall` left out.
    const usage = normalizeUsage({
        contextTokens: 1490,
        budget: 150000,
        breakdown: { full: 116 },
        lastCall: { cacheRead: 0, cacheWrite: 1037, input: 0 },
    });
    assert.deepEqual(usage, {
        contextTokens: 1490,
        budget: 150000,
        cacheHitRate: 0,
        savedTokens: 0,
        savedUsd: 0,
        breakdown: { full: 116, partial: 0, synopsis: 0, evicted: 0 },
        lastCall: { cacheRead: 0, cacheWrite: 1037, input: 0, output: 0 },
    });
    assert.ok(!formatUsage(usage, 0.9).tooltip.includes('NaN'));
    assert.equal(normalizeUsage({ budget: 10 }).lastCall, null);
    assert.equal(normalizeUsage(null).budget, 0);
});

test('a ledger item without tokens, version or pin gets defaults', () => {
    assert.deepEqual(normalizeItem({ id: 'ab12', kind: 'tool_result', state: 'evicted', label: 'search: TODO' }), {
        id: 'ab12',
        kind: 'tool_result',
        state: 'evicted',
        tokens: 0,
        uri: null,
        label: 'search: TODO',
        version: null,
        pinned: false,
    });
});

test('an ask result without usage or edits is still complete', () => {
    const result = normalizeAskResult({ conversationId: 'c-1', text: 'done', calls: 1 });
    assert.deepEqual(result.usage, { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 });
    assert.deepEqual(result.edits, []);
    assert.equal(result.stopReason, 'end_turn');
});
