/**
 * Messages between the Ask Claude panel and the extension, defined once for both sides
 * (the webview bundle and the extension host import this file). Every message is a tagged
 * object; `describeToolUse` turns a tool call into what the panel lists as "read", and
 * `describeSubagentStep` a sub-agent's step into the short line the panel shows for it.
 */
import { AskProgress, AskResult, SubagentProgress } from '../common/protocol';

/** Webview -> extension. */
export type ToExtension =
    | { type: 'ready' }
    | { type: 'ask'; prompt: string }
    | { type: 'cancel' }
    | { type: 'setApiKey' }
    | { type: 'openUri'; uri: string }
    | { type: 'newConversation' };

/**
 * A webview message as the extension may act on it, or undefined for anything else (a
 * missing or mistyped field): the panel's page is a separate program, so its messages are
 * checked like any other input.
 */
export function parseToExtension(value: unknown): ToExtension | undefined {
    if (typeof value !== 'object' || value === null) {
        return undefined;
    }
    const message = value as Record<string, unknown>;
    switch (message.type) {
        case 'ready':
        case 'cancel':
        case 'setApiKey':
        case 'newConversation':
            return { type: message.type };
        case 'ask':
            return typeof message.prompt === 'string' ? { type: 'ask', prompt: message.prompt } : undefined;
        case 'openUri':
            return typeof message.uri === 'string' && message.uri.length > 0 ? { type: 'openUri', uri: message.uri } : undefined;
        default:
            return undefined;
    }
}

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

/** A sub-agent step as the panel shows it: one short line, with the full text behind it when cut. */
export interface SubagentLine {
    kind: 'start' | 'tool' | 'retry' | 'report' | 'error';
    text: string;
    /** The whole text (brief, report or error) when `text` shows only part of it. */
    detail?: string;
}

/** Longest excerpt of a brief, report or error on a sub-agent's line. */
const SUBAGENT_EXCERPT_CHARS = 80;

/** "c-1/sub-1" -> "sub-1": the conversation is the panel's own, so only the sub-agent is named. */
export function subagentName(agent: string): string {
    const name = agent.slice(agent.lastIndexOf('/') + 1).trim();
    return name || 'sub-agent';
}

/**
 * The line for a sub-agent step, or undefined for steps not listed: text deltas and usage
 * (its report arrives whole at `end`; its usage counts in the ask's total) and successful
 * tool results. Never part of the main answer.
 */
export function describeSubagentStep(step: SubagentProgress): SubagentLine | undefined {
    const name = `↳ ${subagentName(typeof step.agent === 'string' ? step.agent : '')}`;
    const text = typeof step.text === 'string' ? step.text : '';
    const tool = str(step.tool) ?? 'a tool';
    const input = typeof step.input === 'object' && step.input !== null ? step.input : {};
    switch (step.event) {
        case 'start':
            return withExcerpt('start', `${name} started`, skipLabels(text), text);
        case 'toolUse': {
            const argument = toolArgument(input);
            return { kind: 'tool', text: `${name}: ${tool}${argument ? ` ${argument}` : ''}` };
        }
        case 'toolResult':
            return step.isError ? withExcerpt('error', `${name}: ${tool} failed`, text, text) : undefined;
        case 'retry':
            return withExcerpt('retry', `${name} retrying`, text, text);
        case 'end':
            return step.isError ? withExcerpt('error', `${name} stopped`, text, text) : withExcerpt('report', `${name} reported`, text, text);
        default:
            return undefined;
    }
}

/** `head: <first line of excerpt, cut>`, keeping `full` as the detail when the line shows less. */
function withExcerpt(kind: SubagentLine['kind'], head: string, excerpt: string, full: string): SubagentLine {
    const first = excerpt.split('\n').find((line) => line.trim().length > 0)?.trim() ?? '';
    const shown = first.length > SUBAGENT_EXCERPT_CHARS ? `${first.slice(0, SUBAGENT_EXCERPT_CHARS - 1)}…` : first;
    const line: SubagentLine = { kind, text: shown ? `${head}: ${shown}` : head };
    return shown !== full.trim() && full.trim() ? { ...line, detail: full } : line;
}

/** The text without its leading label lines ("Task from the main agent:"). */
function skipLabels(text: string): string {
    const lines = text.split('\n');
    let start = 0;
    while (start < lines.length && /^\S.*:$/.test(lines[start].trim())) {
        start += 1;
    }
    return lines.slice(start).join('\n');
}

/** What a sub-agent's tool call is about: a stored id, a path (and symbol), or a search pattern. */
function toolArgument(input: Record<string, unknown>): string | undefined {
    const id = str(input.id);
    if (id) {
        return id;
    }
    const path = str(input.path) ?? str(input.file_path);
    if (path) {
        const symbol = str(input.symbol);
        return symbol ? `${path}::${symbol}` : path;
    }
    const pattern = str(input.pattern) ?? str(input.query);
    return pattern ? `"${pattern}"` : undefined;
}
