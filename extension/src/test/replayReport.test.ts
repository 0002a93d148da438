import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { parseReplayReport, renderChart, renderReplayHtml, ReplayReportJson, totalsByStrategy } from '../model/replayReport';

const figures = (cost: number, billed: number) => ({
    peak_context: 90_000,
    total_context: 1_200_000,
    billed_input: billed,
    cost_usd: cost,
    cache_hit_rate: 0.8,
    retrievable: 1,
});

const report: ReplayReportJson = {
    sessions: [
        {
            path: '/t/a.jsonl',
            calls: 12,
            model: 'claude-sonnet-4-5',
            recorded_usage: { billed_input: 100 },
            fidelity: { billed_input_error: 0.031, median_call_error: -0.02 },
            strategies: { recorded: figures(1.0, 300_000), ours: figures(0.4, 120_000) },
        },
        {
            path: '/t/<b>.jsonl',
            calls: 3,
            model: 'claude-opus-4-1',
            recorded_usage: null,
            fidelity: null,
            strategies: { recorded: figures(0.5, 150_000), ours: figures(0.1, 30_000) },
        },
    ],
};

test('totals sum each strategy over the sessions', () => {
    assert.deepEqual(totalsByStrategy(report), [
        { name: 'recorded', costUsd: 1.5, billedInput: 450_000 },
        { name: 'ours', costUsd: 0.5, billedInput: 150_000 },
    ]);
});

test('the chart has one bar per strategy, scaled to the largest, cheapest highlighted', () => {
    const svg = renderChart(report);
    assert.equal((svg.match(/<rect /g) ?? []).length, 2);
    assert.match(svg, /<rect class="bar" x="150" y="8" width="360"/);
    assert.match(svg, /<rect class="bar best" x="150" y="34" width="120"/);
    assert.ok(svg.includes('$0.50 · 150k'));
});

test('the report escapes paths and shows fidelity where known', () => {
    const html = renderReplayHtml(report);
    assert.ok(html.includes('/t/&lt;b&gt;.jsonl'));
    assert.ok(!html.includes('<b>.jsonl'));
    assert.ok(html.includes('billed input error 3.1%'));
    assert.ok(html.includes('<h1>Replay: 2 sessions</h1>'));
});

test('something that is not a report gets a reason, not a crash', () => {
    assert.equal(typeof parseReplayReport(null), 'string');
    assert.equal(typeof parseReplayReport({ sessions: 'x' }), 'string');
    assert.equal(parseReplayReport({ sessions: [] }), 'The transcript contained no model calls to replay.');
    assert.deepEqual(parseReplayReport(report), report);
});

test('sessions and strategies of the wrong shape are skipped, a path that is not text is shown as text', () => {
    const parsed = parseReplayReport({
        sessions: [
            { path: '/t/null.jsonl', strategies: null },
            { path: 42, calls: 1, strategies: { recorded: figures(1, 10), broken: null } },
        ],
    });
    assert.ok(typeof parsed !== 'string');
    assert.equal(parsed.sessions.length, 1);
    const html = renderReplayHtml(parsed);
    assert.match(html, /<h2>42<\/h2>/);
    assert.doesNotMatch(html, /broken/);
});
