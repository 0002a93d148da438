/** Short human figures for tokens, dollars and rates, shared by the status bar and the views. */

/** 950 -> "950", 48210 -> "48.2k", 150000 -> "150k", 1234567 -> "1.23M". */
export function formatTokens(tokens: number): string {
    const n = Math.max(0, Math.round(tokens));
    if (n < 1000) {
        return String(n);
    }
    if (n < 1_000_000) {
        const k = n / 1000;
        return `${trim(k < 100 ? k.toFixed(1) : k.toFixed(0))}k`;
    }
    return `${trim((n / 1_000_000).toFixed(2))}M`;
}

/** 0.36 -> "$0.36", 0.004 -> "$0.004", 12.5 -> "$12.50", 0 -> "$0.00". */
export function formatUsd(usd: number): string {
    if (usd > 0 && usd < 0.01) {
        return `$${usd.toPrecision(1)}`;
    }
    return `$${usd.toFixed(2)}`;
}

/** 0.873 -> "87%". */
export function formatRate(rate: number): string {
    return `${Math.round(Math.min(1, Math.max(0, rate)) * 100)}%`;
}

function trim(value: string): string {
    return value.includes('.') ? value.replace(/\.?0+$/, '') : value;
}
