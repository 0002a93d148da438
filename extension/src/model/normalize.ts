/**
 * Fills in what the wire may leave out. The protocol lets the server omit optional fields and
 * its serializer drops values equal to their defaults (a 0, a false, a null), so every payload
 * is completed here once, as it arrives, and the views can rely on whole objects.
 */
import { ApiUsage, AskResult, Breakdown, LastCall, LedgerItem, Usage } from '../common/protocol';

/** Whatever arrived on the wire: typed by the protocol, trusted by nothing here. */
type Loose = unknown;

function num(value: unknown): number {
    return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function obj(value: unknown): Record<string, unknown> {
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function breakdown(raw: unknown): Breakdown {
    const b = obj(raw);
    return { full: num(b.full), partial: num(b.partial), synopsis: num(b.synopsis), evicted: num(b.evicted) };
}

function lastCall(raw: unknown): LastCall | null {
    if (typeof raw !== 'object' || raw === null) {
        return null;
    }
    const c = obj(raw);
    return { cacheRead: num(c.cacheRead), cacheWrite: num(c.cacheWrite), input: num(c.input), output: num(c.output) };
}

/** A usage notification or status result, with every number present. */
export function normalizeUsage(raw: Loose): Usage {
    const u = obj(raw);
    return {
        contextTokens: num(u.contextTokens),
        budget: num(u.budget),
        cacheHitRate: num(u.cacheHitRate),
        savedTokens: num(u.savedTokens),
        savedUsd: num(u.savedUsd),
        breakdown: breakdown(u.breakdown),
        lastCall: lastCall(u.lastCall),
    };
}

export function normalizeItem(raw: Loose): LedgerItem {
    const i = obj(raw);
    return {
        id: String(i.id ?? ''),
        kind: String(i.kind ?? 'unknown'),
        state: String(i.state ?? 'full'),
        tokens: num(i.tokens),
        uri: typeof i.uri === 'string' ? i.uri : null,
        label: String(i.label ?? i.uri ?? i.id ?? ''),
        version: typeof i.version === 'number' ? i.version : null,
        pinned: i.pinned === true,
    };
}

export function normalizeApiUsage(raw: unknown): ApiUsage {
    const u = obj(raw);
    return {
        inputTokens: num(u.inputTokens),
        outputTokens: num(u.outputTokens),
        cacheReadInputTokens: num(u.cacheReadInputTokens),
        cacheCreationInputTokens: num(u.cacheCreationInputTokens),
    };
}

export function normalizeAskResult(raw: Loose): AskResult {
    const r = obj(raw);
    return {
        conversationId: String(r.conversationId ?? ''),
        text: typeof r.text === 'string' ? r.text : '',
        stopReason: String(r.stopReason ?? 'end_turn'),
        calls: num(r.calls),
        usage: normalizeApiUsage(r.usage),
        edits: Array.isArray(r.edits)
            ? r.edits.map((e) => ({ uri: String(obj(e).uri ?? ''), applied: obj(e).applied === true }))
            : [],
    };
}
