/**
 * Which symbol a selection means, for "Add File or Selection to Context": the innermost
 * document symbol that contains the selection, as a dotted path (`App.run`). Pure: symbols and
 * ranges are plain line/character objects, so it is unit-tested without VS Code.
 */

export interface Pos {
    line: number;
    character: number;
}

export interface SymbolLike {
    name: string;
    range: { start: Pos; end: Pos };
    children: SymbolLike[];
}

function before(a: Pos, b: Pos): boolean {
    return a.line < b.line || (a.line === b.line && a.character <= b.character);
}

function contains(outer: { start: Pos; end: Pos }, inner: { start: Pos; end: Pos }): boolean {
    return before(outer.start, inner.start) && before(inner.end, outer.end);
}

/** The dotted path of the innermost symbol containing `selection`, or undefined. */
export function enclosingSymbolPath(symbols: readonly SymbolLike[], selection: { start: Pos; end: Pos }): string | undefined {
    for (const symbol of symbols) {
        if (contains(symbol.range, selection)) {
            const inner = enclosingSymbolPath(symbol.children, selection);
            return inner ? `${symbol.name}.${inner}` : symbol.name;
        }
    }
    return undefined;
}

/** A selection that is itself a (dotted) identifier names the symbol directly. */
export function selectedIdentifier(text: string): string | undefined {
    const trimmed = text.trim();
    return /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(trimmed) ? trimmed : undefined;
}
