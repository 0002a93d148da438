/**
 * The `ephemeralContext.*` settings as plain values: read through a small source interface
 * (settings.ts passes the WorkspaceConfiguration), so the reading is unit-tested without
 * VS Code. The types mirror the server's options dataclass (docs/protocol.md, Configuration).
 */
import * as os from 'node:os';
import { SECTION } from './constants';

export type CacheTtl = 'auto' | '5m' | '1h';

export interface Limits {
    contextTokens: number;
    maxOutputTokens: number;
    maxFileBytes: number;
    maxTurns: number;
}

/** Exactly the server's options (docs/protocol.md, Configuration). */
export interface ServerSettings {
    model: string;
    apiBaseUrl: string | null;
    limits: Limits;
    cacheTtl: CacheTtl;
    secretPatterns: string[];
    allowSecretFiles: string[];
    dataDirectory: string | null;
    skillsDirectory: string | null;
    usageThrottleMs: number;
    stallTimeoutSeconds: number;
}

/** Everything under `ephemeralContext.*`: the server's part plus what only the extension uses. */
export interface ISettings extends ServerSettings {
    /** Python command (executable and arguments); empty means find one. */
    interpreter: string[];
    /** What pip installs into a new virtual environment for the server. */
    serverPackageSpec: string;
}

/** Where the values come from: a WorkspaceConfiguration's `get`, and package.json's defaults. */
export interface SettingsSource {
    get(key: string): unknown;
    defaultOf(key: string): unknown;
}

/** Expands ${workspaceFolder}, ${userHome}, ${env:NAME} and a leading ~ (one place for all paths). */
export function resolveVariables(value: string, folderPath: string | undefined): string {
    const home = os.homedir();
    let result = value
        .replace(/\$\{userHome\}/g, home)
        .replace(/\$\{env:([^}]+)\}/g, (_match, name: string) => process.env[name] ?? '');
    if (folderPath !== undefined) {
        result = result.replace(/\$\{workspaceFolder\}/g, folderPath);
    }
    return result.startsWith('~/') ? home + result.slice(1) : result;
}

function isString(value: unknown): value is string {
    return typeof value === 'string';
}

function isStringList(value: unknown): value is string[] {
    return Array.isArray(value) && value.every(isString);
}

function isOptionalString(value: unknown): value is string | null {
    return value === null || value === undefined || isString(value);
}

/**
 * The settings of one workspace folder (its path expands `${workspaceFolder}`). settings.json
 * can hold any JSON whatever package.json declares. The settings the extension uses itself
 * (the command, the package spec, the paths it expands) fall back to their defaults when
 * their type is wrong, and `ignored` names them for the user. The server's settings are
 * passed as written: it checks them and says what is wrong.
 */
export function readSettings(source: SettingsSource, folderPath: string | undefined): { settings: ISettings; ignored: string[] } {
    const ignored: string[] = [];
    const checked = <T>(key: string, isValid: (value: unknown) => value is T): T => {
        const value = source.get(key);
        if (isValid(value)) {
            return value;
        }
        ignored.push(`${SECTION}.${key}`);
        return source.defaultOf(key) as T;
    };
    const get = <T>(key: string): T => source.get(key) as T;
    const optionalPath = (key: string): string | null => {
        const value = checked(key, isOptionalString);
        return value ? resolveVariables(value, folderPath) : null;
    };
    const settings: ISettings = {
        interpreter: checked('interpreter', isStringList).map((part) => resolveVariables(part, folderPath)),
        serverPackageSpec: resolveVariables(checked('serverPackageSpec', isString), folderPath),
        model: get<string>('model'),
        apiBaseUrl: get<string | null>('apiBaseUrl') || null,
        limits: get<Limits>('limits'),
        cacheTtl: get<CacheTtl>('cacheTtl'),
        secretPatterns: get<string[]>('secretPatterns'),
        allowSecretFiles: get<string[]>('allowSecretFiles'),
        dataDirectory: optionalPath('dataDirectory'),
        skillsDirectory: optionalPath('skillsDirectory'),
        usageThrottleMs: get<number>('usageThrottleMs'),
        stallTimeoutSeconds: get<number>('stallTimeoutSeconds'),
    };
    return { settings, ignored };
}

/** Drops what only the extension uses, so the server never sees keys it does not know. */
export function toServerSettings(settings: ServerSettings): ServerSettings {
    return {
        model: settings.model,
        apiBaseUrl: settings.apiBaseUrl,
        limits: { ...settings.limits },
        cacheTtl: settings.cacheTtl,
        // As written, so the server refuses a string: spread, "*.pem" would become the glob "*".
        secretPatterns: settings.secretPatterns,
        allowSecretFiles: settings.allowSecretFiles,
        dataDirectory: settings.dataDirectory,
        skillsDirectory: settings.skillsDirectory,
        usageThrottleMs: settings.usageThrottleMs,
        stallTimeoutSeconds: settings.stallTimeoutSeconds,
    };
}
