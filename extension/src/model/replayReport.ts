/**
 * Renders the replay report (`ectx replay --json`: sessions, each with strategies side by
 * side) as an HTML fragment: a bar chart of billed input per strategy summed over the
 * sessions, and one table per session. Pure and escaped (file paths and strategy names come
 * from the report), so it is unit-tested without VS Code.
 */
import { formatRate, formatTokens, formatUsd } from './format';

export interface StrategyFigures {
    peak_context: number;
    total_context: number;
    billed_input: number;
    cost_usd: number;
    cache_hit_rate: number;
    retrievable: number;
}

export interface ReplaySession {
    path: string;
    calls: number;
    model: string;
    recorded_usage: { billed_input: number } | null;
    fidelity: { billed_input_error: number; median_call_error: number } | null;
    strategies: Record<string, StrategyFigures>;
}

export interface ReplayReportJson {
    sessions: ReplaySession[];
}

function escape(text: string): string {
    return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

function num(value: unknown): number {
    return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A session the renderers can print: its path as text, only the strategies that are objects; undefined when it has none. */
function parseSession(value: unknown): ReplaySession | undefined {
    if (!isObject(value) || !isObject(value.strategies)) {
        return undefined;
    }
    const strategies = Object.fromEntries(Object.entries(value.strategies).filter(([, figures]) => isObject(figures)));
    return { ...value, path: String(value.path ?? 'transcript'), strategies } as ReplaySession;
}

/** Checks the shape loosely; returns a readable reason when it is not a replay report. */
export function parseReplayReport(value: unknown): ReplayReportJson | string {
    if (!isObject(value) || !Array.isArray(value.sessions)) {
        return 'The server returned something that is not a replay report (no "sessions" list).';
    }
    const sessions = value.sessions.map(parseSession).filter((session): session is ReplaySession => session !== undefined);
    return sessions.length > 0 ? { sessions } : 'The transcript contained no model calls to replay.';
}

/** Total cost and billed input per strategy over all sessions, in the report's order. */
export function totalsByStrategy(report: ReplayReportJson): { name: string; costUsd: number; billedInput: number }[] {
    const totals = new Map<string, { costUsd: number; billedInput: number }>();
    for (const session of report.sessions) {
        for (const [name, figures] of Object.entries(session.strategies)) {
            const total = totals.get(name) ?? { costUsd: 0, billedInput: 0 };
            total.costUsd += num(figures.cost_usd);
            total.billedInput += num(figures.billed_input);
            totals.set(name, total);
        }
    }
    return [...totals.entries()].map(([name, total]) => ({ name, ...total }));
}

/** A horizontal bar chart (SVG) of dollars per strategy; the cheapest bar is highlighted. */
export function renderChart(report: ReplayReportJson): string {
    const rows = totalsByStrategy(report);
    const max = Math.max(...rows.map((r) => r.costUsd), 1e-9);
    const cheapest = Math.min(...rows.map((r) => r.costUsd));
    const rowHeight = 26;
    const labelWidth = 150;
    const barWidth = 360;
    const height = rows.length * rowHeight + 10;
    const bars = rows
        .map((row, i) => {
            const y = 5 + i * rowHeight;
            const width = Math.max(1, Math.round((row.costUsd / max) * barWidth));
            const cls = row.costUsd === cheapest ? 'bar best' : 'bar';
            return (
                `<text class="label" x="${labelWidth - 8}" y="${y + 16}" text-anchor="end">${escape(row.name)}</text>` +
                `<rect class="${cls}" x="${labelWidth}" y="${y + 3}" width="${width}" height="${rowHeight - 8}"><title>${escape(row.name)}: ${formatUsd(row.costUsd)}, ${formatTokens(row.billedInput)} billed input tokens</title></rect>` +
                `<text class="value" x="${labelWidth + width + 6}" y="${y + 16}">${formatUsd(row.costUsd)} · ${formatTokens(row.billedInput)}</text>`
            );
        })
        .join('');
    return (
        `<svg class="chart" role="img" aria-label="Billed input per strategy" width="${labelWidth + barWidth + 130}" height="${height}" ` +
        `viewBox="0 0 ${labelWidth + barWidth + 130} ${height}" xmlns="http://www.w3.org/2000/svg">${bars}</svg>`
    );
}

function sessionTable(session: ReplaySession): string {
    const head = '<tr><th>strategy</th><th>peak context</th><th>total context</th><th>billed input</th><th>cost</th><th>cache hit rate</th><th>retrievable</th></tr>';
    const rows = Object.entries(session.strategies)
        .map(
            ([name, f]) =>
                `<tr><td>${escape(name)}</td><td>${formatTokens(num(f.peak_context))}</td><td>${formatTokens(num(f.total_context))}</td>` +
                `<td>${formatTokens(num(f.billed_input))}</td><td>${formatUsd(num(f.cost_usd))}</td>` +
                `<td>${formatRate(num(f.cache_hit_rate))}</td><td>${formatRate(num(f.retrievable))}</td></tr>`,
        )
        .join('');
    const fidelity = session.fidelity
        ? `<p class="fidelity">Recorded-strategy fidelity: billed input error ${(num(session.fidelity.billed_input_error) * 100).toFixed(1)}%, ` +
          `median per-call error ${(num(session.fidelity.median_call_error) * 100).toFixed(1)}%.</p>`
        : '';
    return (
        `<section class="session"><h2>${escape(session.path)}</h2>` +
        `<p>${num(session.calls)} calls · model ${escape(String(session.model ?? 'unknown'))}</p>` +
        `<table>${head}${rows}</table>${fidelity}</section>`
    );
}

export function renderReplayHtml(report: ReplayReportJson): string {
    return (
        `<h1>Replay: ${report.sessions.length} session${report.sessions.length === 1 ? '' : 's'}</h1>` +
        `<p>Dollars of billed input per strategy at list prices (summed over the sessions); the cheapest is highlighted.</p>` +
        renderChart(report) +
        report.sessions.map(sessionTable).join('')
    );
}
