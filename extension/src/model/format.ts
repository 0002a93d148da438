/** Short human figures for tokens, dollars and rates, shared by the status bar and the views. */

/** 950 -> "950", 48210 -> "48.2k", 150000 -> "150k", 1234567 -> "1.23M", 2.5e9 -> "2.5B". */
export function formatTokens(tokens: number): string {
    const n = Math.max(0, Math.round(tokens));
    if (n < 1000) {
        return String(n);
    }
    // Each unit is chosen after rounding, so 999_700 is "1M", never "1000k".
    const thousands = trim((n / 1000).toFixed(n < 100_000 ? 1 : 0));
    if (Number(thousands) < 1000) {
        return `${thousands}k`;
    }
    const millions = trim((n / 1_000_000).toFixed(2));
    if (Number(millions) < 1000) {
        return `${millions}M`;
    }
    return `${trim((n / 1_000_000_000).toFixed(2))}B`;
}

/** Signed, for savings (negative on a short session): -1200 -> "-1.2k", 950 -> "950". */
export function formatTokenDelta(tokens: number): string {
    return tokens < 0 ? `-${formatTokens(-tokens)}` : formatTokens(tokens);
}

/** 0.36 -> "$0.36", 0.004 -> "$0.004", 12.5 -> "$12.50", 0 -> "$0.00", -0.05 -> "-$0.05". */
export function formatUsd(usd: number): string {
    if (usd < 0) {
        return `-${formatUsd(-usd)}`;
    }
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
