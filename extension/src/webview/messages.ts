/**
 * Messages between the Ask Claude panel and the extension, defined once for both sides
 * (the webview bundle and the extension host import this file). Every message is a tagged
 * object; `describeToolUse` turns a tool call into what the panel lists as "read".
 */
import { AskProgress, AskResult } from '../common/protocol';

/** Webview -> extension. */
export type ToExtension =
    | { type: 'ready' }
    | { type: 'ask'; prompt: string }
    | { type: 'cancel' }
    | { type: 'setApiKey' }
    | { type: 'openUri'; uri: string }
    | { type: 'newConversation' };

/** Extension -> webview. */
export type ToWebview =
    | { type: 'state'; hasApiKey: boolean; serverRunning: boolean; serverMessage: string }
    | { type: 'started'; prompt: string }
    | { type: 'progress'; event: AskProgress; /** For edits: the file, relative to the workspace. */ label?: string }
    | { type: 'done'; result: AskResult }
    | { type: 'failed'; message: string; cancelled: boolean }
    | { type: 'cleared' };

export interface ReadEntry {
    kind: 'file' | 'symbol' | 'outline' | 'search' | 'stored' | 'other';
    label: string;
    /** A path relative to the workspace (or absolute), when the entry is a file. */
    path?: string;
}

function str(value: unknown): string | undefined {
    return typeof value === 'string' && value.length > 0 ? value : undefined;
}

/** What a tool call read, for the panel's "Read" list (tools from the server's agent loop). */
export function describeToolUse(tool: string, input: Record<string, unknown>): ReadEntry | undefined {
    const path = str(input.path) ?? str(input.file_path);
    switch (tool) {
        case 'read_file': {
            const offset = typeof input.offset === 'number' ? input.offset : undefined;
            const limit = typeof input.limit === 'number' ? input.limit : undefined;
            const range = offset !== undefined || limit !== undefined ? ` (from ${offset ?? 0}${limit !== undefined ? `, ${limit}` : ''})` : '';
            return path ? { kind: 'file', label: `${path}${range}`, path } : undefined;
        }
        case 'read_symbol': {
            const symbol = str(input.symbol);
            return path ? { kind: 'symbol', label: symbol ? `${path}::${symbol}` : path, path } : undefined;
        }
        case 'outline':
            return path ? { kind: 'outline', label: `outline of ${path}`, path } : undefined;
        case 'search': {
            const pattern = str(input.pattern) ?? str(input.query);
            const glob = str(input.path_glob) ?? str(input.glob) ?? path;
            return pattern ? { kind: 'search', label: `search "${pattern}"${glob ? ` in ${glob}` : ''}` } : undefined;
        }
        case 'read_session_file': {
            const id = str(input.id);
            return id ? { kind: 'stored', label: `stored ${id}` } : undefined;
        }
        case 'edit_file':
            return undefined;
        default:
            return { kind: 'other', label: tool };
    }
}
