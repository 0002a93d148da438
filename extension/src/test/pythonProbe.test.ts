import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { checkServerPackage } from '../common/pythonProbe';

// out/test/ -> the repository root, whose .venv has the server installed.
const REPO_PYTHON = path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
const hasVenv = fs.existsSync(REPO_PYTHON);

test('the repository venv can run the server', { skip: !hasVenv && 'no .venv' }, async () => {
    assert.deepEqual(await checkServerPackage([REPO_PYTHON], 'ephemeral_context'), { kind: 'ok' });
});

test('a Python without the module reports its version and the missing package', { skip: !hasVenv && 'no .venv' }, async () => {
    const check = await checkServerPackage([REPO_PYTHON], 'no_such_module_for_ectx');
    assert.equal(check.kind, 'missingPackage');
    assert.match((check as { version: string }).version, /^3\.\d+$/);
});

test('a command that is not there is "no Python", with the reason', async () => {
    const check = await checkServerPackage([path.join(os.tmpdir(), 'no-such-python-ectx')], 'ephemeral_context');
    assert.equal(check.kind, 'noPython');
    assert.match((check as { detail: string }).detail, /ENOENT/);
});

test('a Python older than 3.11 is reported as too old', async () => {
    // A stand-in interpreter that answers the probe as Python 3.9 would: no old Python exists here.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ectx-old-python-'));
    const fake = path.join(dir, 'python3.9');
    fs.writeFileSync(fake, '#!/bin/sh\necho "3.9 old"\n', { mode: 0o755 });
    try {
        assert.deepEqual(await checkServerPackage([fake], 'ephemeral_context'), { kind: 'tooOld', version: '3.9' });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
