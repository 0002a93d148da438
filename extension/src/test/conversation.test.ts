import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { ConversationState } from '../model/conversation';

test('asks continue the conversation the first one started', () => {
    const state = new ConversationState();
    const first = state.begin();
    assert.equal(first.conversationId, undefined);
    assert.ok(state.accepts('c-1'));
    assert.ok(!state.accepts('c-other'));
    assert.ok(state.end(first.run, 'c-1'));
    assert.ok(!state.accepts('c-1'), 'no ask runs: nothing is shown');
    assert.equal(state.begin().conversationId, 'c-1');
});

test('New Conversation while an ask streams: its late events and result are not shown and do not carry over', () => {
    const state = new ConversationState();
    const first = state.begin();
    state.accepts('c-1');
    state.end(first.run, 'c-1');
    const second = state.begin();
    state.reset();
    assert.ok(!state.accepts('c-1'), 'a text delta that was already on its way');
    assert.ok(!state.end(second.run, 'c-1'), 'the cancelled ask answers late');
    const third = state.begin();
    assert.equal(third.conversationId, undefined);
    assert.ok(state.accepts('c-2'));
    assert.ok(!state.accepts('c-1'));
    assert.ok(state.end(third.run, 'c-2'));
    assert.equal(state.begin().conversationId, 'c-2');
});
