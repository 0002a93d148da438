/**
 * Turns the server's ledger items into the Context view's tree: one group per item kind (in
 * a fixed order, unknown kinds after, alphabetically), items pinned first and then by size.
 * Pure (no `vscode` import): treeView.ts only maps these nodes onto TreeItems.
 */
import { LedgerItem } from '../common/protocol';
import { formatTokens } from './format';

const KIND_ORDER = ['file', 'symbol', 'skill', 'memory', 'tool_result'];
const KIND_TITLES: Record<string, string> = {
    file: 'Files',
    symbol: 'Symbols',
    skill: 'Skills',
    memory: 'Memories',
    tool_result: 'Tool results',
};
const KIND_ICONS: Record<string, string> = {
    file: 'file',
    symbol: 'symbol-method',
    skill: 'book',
    memory: 'note',
    tool_result: 'terminal',
};
/** States whose content is not sent (a placeholder or just the id); the status bar counts both as evicted. */
const NOT_SENT = new Set(['evicted', 'reference']);

export interface GroupNode {
    type: 'group';
    kind: string;
    label: string;
    description: string;
    children: ItemNode[];
}

export interface ItemNode {
    type: 'item';
    item: LedgerItem;
    label: string;
    description: string;
    tooltip: string;
    icon: string;
    /** Drives the context menu: `ectx-item`, `pinned` or `unpinned`, and `hasUri` for files (pin and unpin need a uri). */
    contextValue: string;
}

export type ContextNode = GroupNode | ItemNode;

/** Title of a kind, generic for kinds this version does not know ("new_kind" -> "New kind"). */
export function kindTitle(kind: string): string {
    const known = KIND_TITLES[kind];
    if (known) {
        return known;
    }
    const words = kind.replace(/_/g, ' ');
    return words.charAt(0).toUpperCase() + words.slice(1);
}

function kindRank(kind: string): number {
    const index = KIND_ORDER.indexOf(kind);
    return index === -1 ? KIND_ORDER.length : index;
}

/** How an item is named in the tree; the view passes one that shows workspace-relative paths. */
export type LabelOf = (item: LedgerItem) => string;

export function toItemNode(item: LedgerItem, labelOf: LabelOf = (i) => i.label): ItemNode {
    const parts = [item.state, `${formatTokens(item.tokens)} tok`];
    if (item.pinned) {
        parts.push('pinned');
    }
    const tooltip = [
        `${kindTitle(item.kind)} · ${item.state}${item.pinned ? ' · pinned' : ''}`,
        `${item.tokens} tokens${NOT_SENT.has(item.state) ? ' (not sent; hydratable by id)' : ''}`,
        `id ${item.id}${item.version !== null ? ` · version ${item.version}` : ''}`,
        ...(item.uri ? [item.uri] : []),
    ].join('\n');
    return {
        type: 'item',
        item,
        label: labelOf(item),
        description: parts.join(' · '),
        tooltip,
        icon: NOT_SENT.has(item.state) ? 'circle-slash' : (KIND_ICONS[item.kind] ?? 'circle-outline'),
        contextValue: ['ectx-item', item.pinned ? 'pinned' : 'unpinned', ...(item.uri ? ['hasUri'] : [])].join(' '),
    };
}

function compareItems(a: LedgerItem, b: LedgerItem): number {
    if (a.pinned !== b.pinned) {
        return a.pinned ? -1 : 1;
    }
    return b.tokens - a.tokens || a.label.localeCompare(b.label);
}

/** The tree's root level: non-empty groups only. */
export function buildContextTree(items: readonly LedgerItem[], labelOf?: LabelOf): GroupNode[] {
    const byKind = new Map<string, LedgerItem[]>();
    for (const item of items) {
        const list = byKind.get(item.kind) ?? [];
        list.push(item);
        byKind.set(item.kind, list);
    }
    return [...byKind.entries()]
        .sort(([a], [b]) => kindRank(a) - kindRank(b) || a.localeCompare(b))
        .map(([kind, list]) => {
            const sent = list.filter((item) => !NOT_SENT.has(item.state)).reduce((sum, item) => sum + item.tokens, 0);
            return {
                type: 'group',
                kind,
                label: kindTitle(kind),
                description: `${list.length} · ${formatTokens(sent)} tok`,
                children: [...list].sort(compareItems).map((item) => toItemNode(item, labelOf)),
            };
        });
}
