/**
 * Names and tunables shared across the extension. Identifiers that appear in package.json
 * (command and view ids) are spelled here once; names and module come from package.json's
 * serverInfo at run time (see setup.ts).
 */
import * as path from 'node:path';

export const EXTENSION_ROOT_DIR = path.dirname(__dirname);

/** Configuration section; also the prefix of every setting and command id. */
export const SECTION = 'ephemeralContext';

/** A burst of restart triggers (settings, interpreter, command) within this window is one restart. */
export const SERVER_RESTART_DELAY_MS = 1000;

/** Crash restarts back off from this delay, doubling up to the maximum. */
export const CRASH_RESTART_BASE_MS = 1000;
export const CRASH_RESTART_MAX_MS = 30_000;
/** A server that ran this long without crashing resets the backoff. */
export const CRASH_RESTART_RESET_MS = 60_000;

/** Share of the context budget at which the status bar turns to the warning colour. */
export const BUDGET_WARNING_RATIO = 0.9;

/** Key under which the Anthropic API key is kept in SecretStorage. */
export const API_KEY_SECRET = 'ephemeralContext.anthropicApiKey';

export const Commands = {
    ask: 'ephemeralContext.ask',
    addToContext: 'ephemeralContext.addToContext',
    pin: 'ephemeralContext.pin',
    unpin: 'ephemeralContext.unpin',
    drop: 'ephemeralContext.drop',
    open: 'ephemeralContext.open',
    showContext: 'ephemeralContext.showContext',
    refreshContext: 'ephemeralContext.refreshContext',
    replay: 'ephemeralContext.replay',
    setApiKey: 'ephemeralContext.setApiKey',
    restart: 'ephemeralContext.restart',
    showLog: 'ephemeralContext.showLog',
} as const;

export const CONTEXT_VIEW_ID = 'ephemeralContext.context';
