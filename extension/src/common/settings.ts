/**
 * Reads the `ephemeralContext.*` settings (per workspace folder, resource scope) into one
 * ISettings object (settingValues.ts checks and expands them). Defaults live only in
 * package.json: `WorkspaceConfiguration.inspect` returns the contributed default, so nothing
 * is repeated here. The part the server understands is split off by toServerSettings and
 * sent both as initializationOptions and as the answer to workspace/configuration.
 */
import { ConfigurationChangeEvent, WorkspaceFolder } from 'vscode';
import { SECTION } from './constants';
import { ISettings, readSettings } from './settingValues';
import { getConfiguration, getWorkspaceFolders } from './vscodeapi';

/** Settings whose change needs a new server process (the others reach it through didChangeConfiguration). */
const RESTART_KEYS = ['interpreter', 'apiBaseUrl', 'dataDirectory'] as const;

/** The settings for one workspace folder (or the window when there is none), and the ones ignored for their type. */
export function getSettings(folder?: WorkspaceFolder): { settings: ISettings; ignored: string[] } {
    const config = getConfiguration(SECTION, folder?.uri);
    return readSettings({ get: (key) => config.get(key), defaultOf: (key) => config.inspect(key)?.defaultValue }, folder?.uri.fsPath);
}

/** The first workspace folder's settings: the server is one process for the whole window. */
export function getWindowSettings(): ISettings {
    return getSettings(getWorkspaceFolders()[0]).settings;
}

/** True when a change touches a setting that only a new server process picks up. */
export function needsRestart(event: ConfigurationChangeEvent): boolean {
    return RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
