/**
 * The custom `ephemeralContext/*` protocol as TypeScript types, one to one with
 * docs/protocol.md. Pure declarations (no `vscode` import) so the view models and their
 * unit tests can use them too.
 */

export const Methods = {
    status: 'ephemeralContext/status',
    items: 'ephemeralContext/items',
    pin: 'ephemeralContext/pin',
    unpin: 'ephemeralContext/unpin',
    drop: 'ephemeralContext/drop',
    hydrate: 'ephemeralContext/hydrate',
    ask: 'ephemeralContext/ask',
    replay: 'ephemeralContext/replay',
    askProgress: 'ephemeralContext/askProgress',
    usage: 'ephemeralContext/usage',
} as const;

/** LSP error codes the extension treats specially. */
export const ErrorCodes = {
    invalidParams: -32602,
    requestCancelled: -32800,
    requestFailed: -32803,
} as const;

/** Whether a request failed because it was cancelled (the user's Cancel): not an error to show. */
export function isRequestCancelled(error: unknown): boolean {
    return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === ErrorCodes.requestCancelled;
}

export interface Breakdown {
    full: number;
    partial: number;
    synopsis: number;
    evicted: number;
}

export interface LastCall {
    cacheRead: number;
    cacheWrite: number;
    input: number;
    output: number;
}

/** Payload of the `ephemeralContext/usage` notification. */
export interface Usage {
    contextTokens: number;
    budget: number;
    cacheHitRate: number;
    savedTokens: number;
    savedUsd: number;
    breakdown: Breakdown;
    lastCall?: LastCall | null;
}

/** Result of `ephemeralContext/status`: the usage plus counts and the model. */
export interface StatusResult extends Usage {
    items: number;
    model: string;
    openDocuments: number;
    positionEncoding: string;
}

/** Known kinds; the server may add more, shown generically. */
export type ItemKind = 'file' | 'symbol' | 'skill' | 'memory' | 'tool_result' | (string & {});
export type ItemState = 'full' | 'partial' | 'synopsis' | 'reference' | 'evicted' | (string & {});

export interface LedgerItem {
    id: string;
    kind: ItemKind;
    state: ItemState;
    tokens: number;
    uri: string | null;
    label: string;
    version: number | null;
    pinned: boolean;
}

export interface ItemsResult {
    items: LedgerItem[];
}

export interface PinParams {
    uri: string;
    symbol?: string;
}

export interface PinResult {
    item: LedgerItem;
}

export type DropParams = { uri: string } | { id: string };

export interface DropResult {
    dropped: string[];
}

export interface AskParams {
    prompt: string;
    conversationId?: string;
}

export interface ApiUsage {
    inputTokens: number;
    outputTokens: number;
    cacheReadInputTokens: number;
    cacheCreationInputTokens: number;
}

export type AskProgress =
    | { conversationId: string; kind: 'text'; text: string }
    | { conversationId: string; kind: 'toolUse'; tool: string; input: Record<string, unknown> }
    | { conversationId: string; kind: 'toolResult'; tool: string; text: string; isError: boolean }
    | { conversationId: string; kind: 'edit'; uri: string; applied: boolean }
    | { conversationId: string; kind: 'usage'; usage: ApiUsage }
    | SubagentProgress;

/** What happened in a sub-agent started by the `delegate` tool. */
export type SubagentEvent = 'start' | 'text' | 'toolUse' | 'toolResult' | 'usage' | 'retry' | 'end';

/**
 * A step of a sub-agent (`agent` is `<conversationId>/sub-<n>`); the optional fields are as
 * for the main agent's kinds of the same name. Its text is never part of the main answer.
 */
export interface SubagentProgress {
    conversationId: string;
    kind: 'subagent';
    agent: string;
    event: SubagentEvent;
    text?: string;
    tool?: string;
    input?: Record<string, unknown>;
    isError?: boolean;
    usage?: ApiUsage;
}

export interface AskResult {
    conversationId: string;
    text: string;
    stopReason: string;
    calls: number;
    usage: ApiUsage;
    edits: { uri: string; applied: boolean }[];
}

export interface ReplayParams {
    path: string;
}

/** The replay report is whatever `ectx replay --json` prints; rendered generically. */
export type ReplayReport = Record<string, unknown>;

export interface HydrateParams {
    id: string;
    offset?: number;
    limit?: number;
}

export interface HydrateResult {
    id: string;
    text: string;
    totalLength: number;
    offset: number;
    uri: string | null;
    version: number | null;
}
