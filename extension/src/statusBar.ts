/**
 * The status-bar item: context tokens / budget, cache hit rate and dollars saved, updated from
 * the server's usage notifications (or its state while it is not running); warning and error
 * background colours near and past the budget; a click opens the Context view.
 */
import { Disposable, MarkdownString, StatusBarItem, ThemeColor } from 'vscode';
import { BUDGET_WARNING_RATIO, Commands, SECTION } from './common/constants';
import { Usage } from './common/protocol';
import { ServerManager } from './common/server';
import { createStatusBarItem } from './common/vscodeapi';
import { formatServerState, formatUsage, ServerState, StatusLevel, StatusText } from './model/statusText';

const BACKGROUNDS: Record<StatusLevel, ThemeColor | undefined> = {
    normal: undefined,
    warning: new ThemeColor('statusBarItem.warningBackground'),
    error: new ThemeColor('statusBarItem.errorBackground'),
};

export class ContextStatusBar implements Disposable {
    private readonly item: StatusBarItem;
    private readonly listeners: Disposable[];
    private lastUsage: Usage | undefined;

    constructor(server: ServerManager) {
        this.item = createStatusBarItem(`${SECTION}.status`, 100);
        this.item.name = 'Ephemeral Context';
        this.item.command = Commands.showContext;
        this.listeners = [
            server.onUsage((usage) => {
                this.lastUsage = usage;
                this.render(formatUsage(usage, BUDGET_WARNING_RATIO));
            }),
            server.onState((state) => this.renderState(state)),
        ];
        this.renderState(server.state);
    }

    /** Usage is shown while the server runs and has reported; otherwise the server's state. */
    private renderState(state: ServerState): void {
        if (state.kind === 'running' && this.lastUsage) {
            this.render(formatUsage(this.lastUsage, BUDGET_WARNING_RATIO));
        } else {
            this.render(formatServerState(state));
        }
        if (state.kind !== 'running') {
            this.lastUsage = undefined;
        }
    }

    private render(status: StatusText): void {
        this.item.text = status.text;
        const tooltip = new MarkdownString(status.tooltip, true);
        this.item.tooltip = tooltip;
        this.item.backgroundColor = BACKGROUNDS[status.level];
        this.item.show();
    }

    dispose(): void {
        this.listeners.forEach((listener) => listener.dispose());
        this.item.dispose();
    }
}
