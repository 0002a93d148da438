import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { CrashBackoff } from '../common/backoff';

const options = { baseMs: 1000, maxMs: 8000, resetAfterMs: 60_000 };

test('crashes in a row double the delay up to the cap', () => {
    const backoff = new CrashBackoff(options);
    const delays = [];
    for (let now = 0; now < 6000; now += 1000) {
        backoff.started(now);
        delays.push(backoff.crashed(now + 10));
    }
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, 8000, 8000]);
    assert.equal(backoff.crashes, 6);
});

test('a run longer than the reset window starts the schedule over', () => {
    const backoff = new CrashBackoff(options);
    backoff.started(0);
    backoff.crashed(10);
    backoff.started(20);
    assert.equal(backoff.crashed(30), 2000);
    backoff.started(100);
    assert.equal(backoff.crashed(100 + 60_000), 1000);
    assert.equal(backoff.crashes, 1);
});

test('a deliberate restart forgets earlier crashes', () => {
    const backoff = new CrashBackoff(options);
    backoff.crashed(0);
    backoff.crashed(1);
    backoff.reset();
    assert.equal(backoff.crashed(2), 1000);
});
