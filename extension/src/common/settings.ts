/**
 * Reads the `ephemeralContext.*` settings (per workspace folder, resource scope) into one
 * ISettings object. Defaults live only in package.json: `WorkspaceConfiguration.get` returns
 * the contributed default, so nothing is repeated here. The part the server understands
 * (ServerSettings, matching the server's options dataclass in docs/protocol.md) is split off
 * in one function and sent both as initializationOptions and as the answer to
 * workspace/configuration.
 */
import * as os from 'node:os';
import { ConfigurationChangeEvent, WorkspaceFolder } from 'vscode';
import { SECTION } from './constants';
import { getConfiguration, getWorkspaceFolders } from './vscodeapi';

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

/** Settings whose change needs a new server process (the others reach it through didChangeConfiguration). */
const RESTART_KEYS = ['interpreter', 'apiBaseUrl', 'dataDirectory'] as const;

/** Expands ${workspaceFolder}, ${userHome}, ${env:NAME} and a leading ~ (one place for all paths). */
export function resolveVariables(value: string, folder: WorkspaceFolder | undefined): string {
    const home = os.homedir();
    let result = value
        .replace(/\$\{userHome\}/g, home)
        .replace(/\$\{env:([^}]+)\}/g, (_match, name: string) => process.env[name] ?? '');
    if (folder) {
        result = result.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
    }
    return result.startsWith('~/') ? home + result.slice(1) : result;
}

function optionalPath(value: string | null | undefined, folder: WorkspaceFolder | undefined): string | null {
    return value ? resolveVariables(value, folder) : null;
}

/** The settings for one workspace folder (or the window when there is none). */
export function getSettings(folder?: WorkspaceFolder): ISettings {
    const config = getConfiguration(SECTION, folder?.uri);
    const get = <T>(key: string): T => config.get<T>(key) as T;
    return {
        interpreter: get<string[]>('interpreter').map((part) => resolveVariables(part, folder)),
        serverPackageSpec: resolveVariables(get<string>('serverPackageSpec'), folder),
        model: get<string>('model'),
        apiBaseUrl: get<string | null>('apiBaseUrl') || null,
        limits: get<Limits>('limits'),
        cacheTtl: get<CacheTtl>('cacheTtl'),
        secretPatterns: get<string[]>('secretPatterns'),
        allowSecretFiles: get<string[]>('allowSecretFiles'),
        dataDirectory: optionalPath(get<string | null>('dataDirectory'), folder),
        skillsDirectory: optionalPath(get<string | null>('skillsDirectory'), folder),
        usageThrottleMs: get<number>('usageThrottleMs'),
        stallTimeoutSeconds: get<number>('stallTimeoutSeconds'),
    };
}

/** The first workspace folder's settings: the server is one process for the whole window. */
export function getWindowSettings(): ISettings {
    return getSettings(getWorkspaceFolders()[0]);
}

/** Drops what only the extension uses, so the server never sees keys it does not know. */
export function toServerSettings(settings: ServerSettings): ServerSettings {
    return {
        model: settings.model,
        apiBaseUrl: settings.apiBaseUrl,
        limits: { ...settings.limits },
        cacheTtl: settings.cacheTtl,
        secretPatterns: [...settings.secretPatterns],
        allowSecretFiles: [...settings.allowSecretFiles],
        dataDirectory: settings.dataDirectory,
        skillsDirectory: settings.skillsDirectory,
        usageThrottleMs: settings.usageThrottleMs,
        stallTimeoutSeconds: settings.stallTimeoutSeconds,
    };
}

/** True when a change touches a setting that only a new server process picks up. */
export function needsRestart(event: ConfigurationChangeEvent): boolean {
    return RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
