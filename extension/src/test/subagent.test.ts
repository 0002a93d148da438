import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { SubagentProgress } from '../common/protocol';
import { describeSubagentStep, subagentName } from '../webview/messages';

function step(fields: Omit<SubagentProgress, 'conversationId' | 'kind' | 'agent'>): SubagentProgress {
    return { conversationId: 'c-1', kind: 'subagent', agent: 'c-1/sub-1', ...fields };
}

test('a sub-agent is named without its conversation', () => {
    assert.equal(subagentName('c-1/sub-2'), 'sub-2');
    assert.equal(subagentName('sub-3'), 'sub-3');
    assert.equal(subagentName(''), 'sub-agent');
});

test('each tool call is one line naming the sub-agent, the tool and what it is about', () => {
    assert.deepEqual(describeSubagentStep(step({ event: 'toolUse', tool: 'read_session_file', input: { id: 'f3a9c21b' } })), {
        kind: 'tool',
        text: '↳ sub-1: read_session_file f3a9c21b',
    });
    assert.equal(
        describeSubagentStep(step({ event: 'toolUse', tool: 'read_symbol', input: { path: 'src/app.py', symbol: 'App.run' } }))?.text,
        '↳ sub-1: read_symbol src/app.py::App.run',
    );
    assert.equal(describeSubagentStep(step({ event: 'toolUse', tool: 'search', input: { pattern: 'TODO' } }))?.text, '↳ sub-1: search "TODO"');
    assert.equal(describeSubagentStep(step({ event: 'toolUse', tool: 'memory', input: { command: 'view' } }))?.text, '↳ sub-1: memory');
});

test('the start shows the task, not the brief label, and keeps the whole brief behind it', () => {
    const brief = 'Task from the main agent:\nWhat does cwd() return?\n…[[file:f3a9c21b]] src/app.py — 40 lines…';
    assert.deepEqual(describeSubagentStep(step({ event: 'start', text: brief })), {
        kind: 'start',
        text: '↳ sub-1 started: What does cwd() return?',
        detail: brief,
    });
});

test('the final report is one short line; a long or multi-line one keeps its full text as detail', () => {
    assert.deepEqual(describeSubagentStep(step({ event: 'end', text: 'It returns os.getcwd().', isError: false })), {
        kind: 'report',
        text: '↳ sub-1 reported: It returns os.getcwd().',
    });
    const long = `${'x'.repeat(120)}\nsecond line`;
    const line = describeSubagentStep(step({ event: 'end', text: long, isError: false }));
    assert.equal(line?.text, `↳ sub-1 reported: ${'x'.repeat(79)}…`);
    assert.equal(line?.detail, long);
    assert.deepEqual(describeSubagentStep(step({ event: 'end', text: '', isError: false })), { kind: 'report', text: '↳ sub-1 reported' });
});

test('failures, stops and retries are lines of their own', () => {
    assert.deepEqual(describeSubagentStep(step({ event: 'toolResult', tool: 'read_file', text: 'withheld: .env is a secret file', isError: true })), {
        kind: 'error',
        text: '↳ sub-1: read_file failed: withheld: .env is a secret file',
    });
    assert.equal(describeSubagentStep(step({ event: 'end', text: 'out of steps', isError: true }))?.text, '↳ sub-1 stopped: out of steps');
    assert.equal(describeSubagentStep(step({ event: 'retry', text: 'overloaded (529)' }))?.text, '↳ sub-1 retrying: overloaded (529)');
});

test('text deltas, usage and successful results are not listed; malformed steps do not throw', () => {
    assert.equal(describeSubagentStep(step({ event: 'text', text: 'It returns' })), undefined);
    const usage = { inputTokens: 900, outputTokens: 40, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    assert.equal(describeSubagentStep(step({ event: 'usage', usage })), undefined);
    assert.equal(describeSubagentStep(step({ event: 'toolResult', tool: 'read_file', text: 'import os', isError: false })), undefined);
    const malformed = { conversationId: 'c-1', kind: 'subagent', agent: 7, event: 'toolUse', tool: 3, input: null, text: 5 };
    assert.equal(describeSubagentStep(malformed as unknown as SubagentProgress)?.text, '↳ sub-agent: a tool');
    assert.equal(describeSubagentStep({ ...step({ event: 'end' }), event: 'later' } as unknown as SubagentProgress), undefined);
});
