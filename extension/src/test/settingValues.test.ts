import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { readSettings, SettingsSource, toServerSettings } from '../common/settingValues';

/** package.json's defaults, overridden by what a user wrote in settings.json. */
function source(user: Record<string, unknown>): SettingsSource {
    const defaults: Record<string, unknown> = {
        interpreter: [],
        serverPackageSpec: '',
        model: 'claude-sonnet-4-6',
        apiBaseUrl: null,
        limits: { contextTokens: 150000, maxOutputTokens: 8192, maxFileBytes: 1000000, maxTurns: 20 },
        cacheTtl: 'auto',
        secretPatterns: [],
        allowSecretFiles: [],
        dataDirectory: null,
        skillsDirectory: null,
        usageThrottleMs: 100,
        stallTimeoutSeconds: 60,
    };
    return { get: (key) => (key in user ? user[key] : defaults[key]), defaultOf: (key) => defaults[key] };
}

test('a list setting written as a string reaches the server as written, never as its characters', () => {
    // Spread into characters, "*.pem" would become the glob "*": every secret file allowed.
    const settings = toServerSettings(readSettings(source({ allowSecretFiles: '*.pem', secretPatterns: '*.key' }), undefined).settings);
    assert.equal(settings.allowSecretFiles, '*.pem');
    assert.equal(settings.secretPatterns, '*.key');
});

test('extension-side settings of the wrong type fall back to their defaults and are named', () => {
    const { settings, ignored } = readSettings(
        source({ interpreter: '/usr/bin/python3', serverPackageSpec: 7, dataDirectory: ['/data'], skillsDirectory: {} }),
        '/ws',
    );
    assert.deepEqual(settings.interpreter, []);
    assert.equal(settings.serverPackageSpec, '');
    assert.equal(settings.dataDirectory, null);
    assert.equal(settings.skillsDirectory, null);
    assert.deepEqual(ignored, [
        'ephemeralContext.interpreter',
        'ephemeralContext.serverPackageSpec',
        'ephemeralContext.dataDirectory',
        'ephemeralContext.skillsDirectory',
    ]);
});

test('well-typed settings are expanded and nothing is ignored', () => {
    const { settings, ignored } = readSettings(
        source({ interpreter: ['${workspaceFolder}/.venv/bin/python', '-X', 'utf8'], dataDirectory: '${workspaceFolder}/store' }),
        '/ws',
    );
    assert.deepEqual(settings.interpreter, ['/ws/.venv/bin/python', '-X', 'utf8']);
    assert.equal(settings.dataDirectory, '/ws/store');
    assert.deepEqual(ignored, []);
});
