/**
 * The Ask Claude panel (extension side): one webview panel, created or revealed by the Ask
 * Claude command and revived after a reload. It runs `ephemeralContext/ask` with a
 * cancellation token (cancel sends $/cancelRequest), forwards the streamed askProgress
 * notifications to the webview, and explains what to do when there is no API key or no server.
 */
import {
    CancellationTokenSource,
    Disposable,
    Event,
    Uri,
    ViewColumn,
    WebviewPanel,
    window,
    workspace,
} from 'vscode';
import { Commands } from '../common/constants';
import { traceError, traceWarn } from '../common/log/logging';
import { AskParams, AskResult, isRequestCancelled, Methods } from '../common/protocol';
import { ServerManager } from '../common/server';
import { executeCommand, showErrorMessage } from '../common/vscodeapi';
import { ConversationState } from '../model/conversation';
import { normalizeAskResult } from '../model/normalize';
import { notRunningMessage } from '../model/statusText';
import { renderPage } from './html';
import { parseToExtension, ToExtension, ToWebview } from './messages';

export const CHAT_VIEW_TYPE = 'ephemeralContext.chat';

export interface ChatDependencies {
    extensionUri: Uri;
    server: ServerManager;
    hasApiKey(): Promise<boolean>;
    onDidChangeApiKey: Event<void>;
}

export class ChatPanel implements Disposable {
    private static current: ChatPanel | undefined;

    private readonly disposables: Disposable[] = [];
    private running: CancellationTokenSource | undefined;
    private readonly conversation = new ConversationState();

    static createOrShow(deps: ChatDependencies): void {
        if (ChatPanel.current) {
            ChatPanel.current.panel.reveal(ViewColumn.Beside);
            return;
        }
        const panel = window.createWebviewPanel(CHAT_VIEW_TYPE, 'Ask Claude', ViewColumn.Beside, ChatPanel.options(deps.extensionUri));
        ChatPanel.current = new ChatPanel(panel, deps);
    }

    static revive(panel: WebviewPanel, deps: ChatDependencies): void {
        panel.webview.options = ChatPanel.options(deps.extensionUri);
        ChatPanel.current = new ChatPanel(panel, deps);
    }

    private static options(extensionUri: Uri) {
        return {
            enableScripts: true,
            retainContextWhenHidden: true,
            localResourceRoots: [Uri.joinPath(extensionUri, 'media'), Uri.joinPath(extensionUri, 'dist', 'webview')],
        };
    }

    private constructor(
        private readonly panel: WebviewPanel,
        private readonly deps: ChatDependencies,
    ) {
        const { extensionUri } = deps;
        panel.webview.html = renderPage(panel.webview, {
            title: 'Ask Claude',
            styles: [Uri.joinPath(extensionUri, 'media', 'chat.css')],
            script: Uri.joinPath(extensionUri, 'dist', 'webview', 'chat.js'),
            body: '<main id="app"></main>',
        });
        this.disposables.push(
            panel.onDidDispose(() => this.dispose()),
            panel.webview.onDidReceiveMessage((message: unknown) => void this.receive(message)),
            deps.server.onAskProgress((event) => {
                if (this.conversation.accepts(event.conversationId)) {
                    const label = event.kind === 'edit' ? workspace.asRelativePath(Uri.parse(event.uri)) : undefined;
                    this.post({ type: 'progress', event, label });
                }
            }),
            deps.server.onState(() => void this.postState()),
            deps.onDidChangeApiKey(() => void this.postState()),
        );
    }

    private post(message: ToWebview): void {
        void this.panel.webview.postMessage(message);
    }

    private async postState(): Promise<void> {
        const state = this.deps.server.state;
        this.post({
            type: 'state',
            hasApiKey: await this.deps.hasApiKey(),
            serverRunning: state.kind === 'running',
            serverMessage: state.kind === 'running' ? '' : notRunningMessage('Ephemeral Context', state),
        });
    }

    /** Acts on a well-formed message; a failure (a file that cannot be opened) becomes an error message. */
    private async receive(raw: unknown): Promise<void> {
        const message = parseToExtension(raw);
        if (!message) {
            traceWarn(`The Ask Claude panel sent a message of unknown shape: ${JSON.stringify(raw)?.slice(0, 200)}`);
            return;
        }
        try {
            await this.onMessage(message);
        } catch (error) {
            traceError(`Ask Claude panel: ${message.type} failed: ${errorMessage(error)}`);
            void showErrorMessage(`Ephemeral Context: ${errorMessage(error)}`);
        }
    }

    private async onMessage(message: ToExtension): Promise<void> {
        switch (message.type) {
            case 'ready':
                await this.postState();
                return;
            case 'ask':
                await this.ask(message.prompt);
                return;
            case 'cancel':
                this.running?.cancel();
                return;
            case 'setApiKey':
                await executeCommand(Commands.setApiKey);
                return;
            case 'openUri':
                await window.showTextDocument(Uri.parse(message.uri), { viewColumn: ViewColumn.One, preview: false });
                return;
            case 'newConversation':
                this.running?.cancel();
                this.running = undefined;
                this.conversation.reset();
                this.post({ type: 'cleared' });
                return;
        }
    }

    private async ask(prompt: string): Promise<void> {
        if (this.running || !prompt.trim()) {
            return;
        }
        if (!(await this.deps.hasApiKey())) {
            this.post({
                type: 'failed',
                cancelled: false,
                message: 'No Anthropic API key is set. Run "Ephemeral Context: Set API Key" (it is kept in VS Code\'s secret storage, never in settings).',
            });
            return;
        }
        const source = new CancellationTokenSource();
        this.running = source;
        this.post({ type: 'started', prompt });
        const { run, conversationId } = this.conversation.begin();
        const params: AskParams = conversationId ? { prompt, conversationId } : { prompt };
        try {
            const result = normalizeAskResult(await this.deps.server.request<AskResult>(Methods.ask, params, source.token));
            if (this.conversation.end(run, result.conversationId)) {
                this.post({ type: 'done', result });
            }
        } catch (error) {
            const cancelled = source.token.isCancellationRequested || isRequestCancelled(error);
            const message = cancelled ? 'Cancelled. Edits already applied stay applied (undo them in the editor).' : errorMessage(error);
            if (!cancelled) {
                traceError(`${Methods.ask} failed: ${message}`);
            }
            if (this.conversation.end(run)) {
                this.post({ type: 'failed', message, cancelled });
            }
        } finally {
            source.dispose();
            if (this.running === source) {
                this.running = undefined;
            }
        }
    }

    dispose(): void {
        if (ChatPanel.current !== this) {
            return;
        }
        ChatPanel.current = undefined;
        this.running?.cancel();
        this.panel.dispose();
        this.disposables.forEach((d) => d.dispose());
        this.disposables.length = 0;
    }
}

function errorMessage(error: unknown): string {
    return error instanceof Error ? error.message : String(error);
}
