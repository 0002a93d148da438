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

test('the repository venv imports the module the server runs', { skip: !hasVenv && 'no .venv' }, async () => {
    assert.deepEqual(await checkServerPackage([REPO_PYTHON], 'ephemeral_context.lsp.server'), { kind: 'ok' });
});

test('a Python without the module reports its version and the missing package', { skip: !hasVenv && 'no .venv' }, async () => {
    const check = await checkServerPackage([REPO_PYTHON], 'no_such_module_for_ectx');
    assert.equal(check.kind, 'missingPackage');
    assert.match((check as { version: string }).version, /^3\.\d+$/);
    assert.match((check as { detail: string }).detail, /ModuleNotFoundError: No module named 'no_such_module_for_ectx'/);
});

/** A folder holding one package `name` whose `__init__.py` is `body`; removed after `use`. */
async function withPackage(name: string, body: string, use: (dir: string) => Promise<void>): Promise<void> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ectx-probe-'));
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, '__init__.py'), body);
    try {
        await use(dir);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test('a package that is found but whose dependency is missing is a missing package, with the import error', { skip: !hasVenv && 'no .venv' }, async () => {
    // Found by the import system, it would fail at every start: the probe must send the user to the private install.
    await withPackage('ectx_probe_broken', 'import no_such_dependency_for_ectx\n', async (dir) => {
        const check = await checkServerPackage(['/usr/bin/env', `PYTHONPATH=${dir}`, REPO_PYTHON], 'ectx_probe_broken');
        assert.equal(check.kind, 'missingPackage');
        assert.match((check as { detail: string }).detail, /No module named 'no_such_dependency_for_ectx'/);
    });
});

test('a module that prints while it imports is still judged by the probe\'s own answer', { skip: !hasVenv && 'no .venv' }, async () => {
    await withPackage('ectx_probe_chatty', 'print("hello from the import")\n', async (dir) => {
        const check = await checkServerPackage(['/usr/bin/env', `PYTHONPATH=${dir}`, REPO_PYTHON], 'ectx_probe_chatty');
        assert.deepEqual(check, { kind: 'ok' });
    });
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
