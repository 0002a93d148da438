/**
 * What the status-bar item says: text, Markdown tooltip and colour level, computed from the
 * server's state and its latest `ephemeralContext/usage` payload. Pure, so it is unit-tested
 * without VS Code.
 */
import { Usage } from '../common/protocol';
import { formatRate, formatTokenDelta, formatTokens, formatUsd } from './format';

export type ServerState =
    | { kind: 'starting' }
    | { kind: 'running' }
    | { kind: 'noPython' }
    | { kind: 'installing' }
    | { kind: 'missingPackage' }
    | { kind: 'crashed'; restartInMs: number; crashes: number };

export type StatusLevel = 'normal' | 'warning' | 'error';

export interface StatusText {
    text: string;
    tooltip: string;
    level: StatusLevel;
}

/** Budget use at or above `warningRatio` is a warning, above the budget an error. */
export function budgetLevel(contextTokens: number, budget: number, warningRatio: number): StatusLevel {
    if (budget <= 0) {
        return 'normal';
    }
    const used = contextTokens / budget;
    return used > 1 ? 'error' : used >= warningRatio ? 'warning' : 'normal';
}

export function formatUsage(usage: Usage, warningRatio: number): StatusText {
    const text =
        `$(layers) ${formatTokens(usage.contextTokens)}/${formatTokens(usage.budget)}` +
        ` · ${formatRate(usage.cacheHitRate)} cached · ${formatUsd(usage.savedUsd)} saved`;
    const { breakdown, lastCall } = usage;
    const lines = [
        `**Ephemeral Context** — ${formatTokens(usage.contextTokens)} of ${formatTokens(usage.budget)} tokens` +
            ` (${formatRate(usage.budget > 0 ? usage.contextTokens / usage.budget : 0)} of the budget)`,
        '',
        '| | tokens |',
        '|---|---:|',
        `| files in full | ${formatTokens(breakdown.full)} |`,
        `| partial (synopsis + symbols) | ${formatTokens(breakdown.partial)} |`,
        `| synopsis only | ${formatTokens(breakdown.synopsis)} |`,
        `| evicted (not sent, hydratable) | ${formatTokens(breakdown.evicted)} |`,
        '',
        `Cache hit rate this session: ${formatRate(usage.cacheHitRate)}; saved ${formatTokenDelta(usage.savedTokens)} tokens` +
            ` (${formatUsd(usage.savedUsd)}) versus re-sending every read.`,
        '',
        lastCall
            ? `Last call: ${formatTokens(lastCall.cacheRead)} cache read, ${formatTokens(lastCall.cacheWrite)} cache write,` +
              ` ${formatTokens(lastCall.input)} input, ${formatTokens(lastCall.output)} output.`
            : 'No model call yet.',
        '',
        'Click to show the Context view.',
    ];
    return { text, tooltip: lines.join('\n'), level: budgetLevel(usage.contextTokens, usage.budget, warningRatio) };
}

/** The status bar when the server is not running, or before its first usage report. */
export function formatServerState(state: ServerState): StatusText {
    switch (state.kind) {
        case 'starting':
            return { text: '$(sync~spin) Context', tooltip: 'Ephemeral Context: starting the server…', level: 'normal' };
        case 'running':
            return {
                text: '$(layers) Context',
                tooltip: 'Ephemeral Context: the server is running; usage appears with its first report.\n\nClick to show the Context view.',
                level: 'normal',
            };
        case 'noPython':
            return {
                text: '$(error) Context: no Python',
                tooltip: 'Ephemeral Context: no usable Python 3.11+ was found. Set `ephemeralContext.interpreter`.',
                level: 'error',
            };
        case 'installing':
            return {
                text: '$(sync~spin) Context: installing the server',
                tooltip: 'Ephemeral Context: the selected Python lacks the server; installing it into a private virtual environment (first start only)…',
                level: 'normal',
            };
        case 'missingPackage':
            return {
                text: '$(warning) Context: server not installed',
                tooltip: 'Ephemeral Context: the selected Python lacks the `ephemeral_context` package and installing it failed (see the log). Run **Restart Server** to try again.',
                level: 'warning',
            };
        case 'crashed':
            return {
                text: '$(warning) Context: restarting',
                tooltip: `Ephemeral Context: the server stopped (${state.crashes} in a row); restarting in ${Math.round(state.restartInMs / 1000)} s. See the log.`,
                level: 'warning',
            };
    }
}

/** What a command or the Ask Claude panel says while the server cannot take a request. */
export function notRunningMessage(serverName: string, state: ServerState): string {
    return `The ${serverName} server is not running: ${whyNotRunning(state)}.`;
}

function whyNotRunning(state: ServerState): string {
    switch (state.kind) {
        case 'starting':
            return 'it is starting';
        case 'running':
            return 'it is restarting';
        case 'noPython':
            return 'no usable Python 3.11+ was found';
        case 'installing':
            return 'it is being installed';
        case 'missingPackage':
            return 'its package is not installed (see the log)';
        case 'crashed':
            return 'it stopped and is restarting (see the log)';
    }
}
