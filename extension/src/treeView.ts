/**
 * The Context view: every ledger item grouped by kind, with state and tokens. The provider
 * holds a snapshot fetched from `ephemeralContext/items` whenever a usage notification
 * arrives or the workspace folders change (labels, ours and the server's, are relative to
 * them), coalesced: at most one fetch in flight, one more queued. So
 * getChildren never does I/O and never shows messages.
 */
import { Disposable, Event, EventEmitter, ThemeIcon, TreeDataProvider, TreeItem, TreeItemCollapsibleState, Uri, workspace } from 'vscode';
import { Commands } from './common/constants';
import { traceError } from './common/log/logging';
import { ItemsResult, LedgerItem, Methods } from './common/protocol';
import { ServerManager } from './common/server';
import { buildContextTree, ContextNode, GroupNode } from './model/contextTree';
import { onDidChangeWorkspaceFolders } from './common/vscodeapi';
import { normalizeItem } from './model/normalize';

export class ContextTreeProvider implements TreeDataProvider<ContextNode>, Disposable {
    private readonly changed = new EventEmitter<ContextNode | undefined>();
    readonly onDidChangeTreeData: Event<ContextNode | undefined> = this.changed.event;

    private groups: GroupNode[] = [];
    private items: LedgerItem[] = [];
    private fetching = false;
    private fetchAgain = false;
    private readonly listeners: Disposable[];

    constructor(private readonly server: ServerManager) {
        this.listeners = [
            server.onUsage(() => void this.refresh()),
            onDidChangeWorkspaceFolders(() => void this.refresh()),
            server.onState((state) => {
                if (state.kind !== 'running') {
                    this.show([]);
                }
            }),
        ];
    }

    /** The latest snapshot, for quick picks. */
    get snapshot(): readonly LedgerItem[] {
        return this.items;
    }

    /** Fetches the items again; overlapping calls collapse into one extra fetch. */
    async refresh(): Promise<void> {
        if (this.fetching) {
            this.fetchAgain = true;
            return;
        }
        this.fetching = true;
        try {
            do {
                this.fetchAgain = false;
                try {
                    const result = await this.server.request<ItemsResult>(Methods.items, {});
                    this.show((result.items ?? []).map(normalizeItem));
                } catch (error) {
                    traceError(`${Methods.items} failed: ${String(error)}`);
                }
            } while (this.fetchAgain);
        } finally {
            this.fetching = false;
        }
    }

    private show(items: LedgerItem[]): void {
        this.items = items;
        this.groups = buildContextTree(items, (item) =>
            item.uri?.startsWith('file:') ? workspace.asRelativePath(Uri.parse(item.uri)) : item.label,
        );
        this.changed.fire(undefined);
    }

    getChildren(element?: ContextNode): ContextNode[] {
        if (!element) {
            return this.groups;
        }
        return element.type === 'group' ? element.children : [];
    }

    getTreeItem(node: ContextNode): TreeItem {
        if (node.type === 'group') {
            const group = new TreeItem(node.label, TreeItemCollapsibleState.Expanded);
            group.id = `group:${node.kind}`;
            group.description = node.description;
            return group;
        }
        const item = new TreeItem(node.label, TreeItemCollapsibleState.None);
        item.id = `item:${node.item.id}`;
        item.description = node.description;
        item.tooltip = node.tooltip;
        item.iconPath = new ThemeIcon(node.icon);
        item.contextValue = node.contextValue;
        item.command = { command: Commands.open, title: 'Open', arguments: [node] };
        if (node.item.uri) {
            item.resourceUri = Uri.parse(node.item.uri);
        }
        return item;
    }

    dispose(): void {
        this.listeners.forEach((listener) => listener.dispose());
        this.changed.dispose();
    }
}
