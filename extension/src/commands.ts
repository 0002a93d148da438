/**
 * The command handlers behind package.json's commands. Each one resolves its target (a
 * Context view node, an explorer Uri, the active editor, or a quick pick), makes one request
 * to the server and reports failures as a message; none of them blocks the editor.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
    DocumentSymbol,
    ExtensionContext,
    LogOutputChannel,
    ProgressLocation,
    SymbolInformation,
    TextEditor,
    Uri,
    window,
    workspace,
} from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import { ApiKeyStore } from './common/apiKey';
import { Commands, CONTEXT_VIEW_ID } from './common/constants';
import { traceError, traceInfo } from './common/log/logging';
import { DropParams, DropResult, ErrorCodes, HydrateResult, isRequestCancelled, Methods, PinParams, PinResult } from './common/protocol';
import { ServerManager } from './common/server';
import { executeCommand, registerCommand, showErrorMessage, showInformationMessage, withProgress } from './common/vscodeapi';
import { ContextNode, ItemNode } from './model/contextTree';
import { normalizeItem } from './model/normalize';
import { notRunningMessage } from './model/statusText';
import { enclosingSymbolPath, selectedIdentifier, SymbolLike } from './model/symbols';
import { ContextTreeProvider } from './treeView';
import { ChatDependencies, ChatPanel } from './webview/chatPanel';
import { showReplayReport } from './webview/replayPanel';

export interface CommandDependencies {
    context: ExtensionContext;
    server: ServerManager;
    tree: ContextTreeProvider;
    apiKeys: ApiKeyStore;
    channel: LogOutputChannel;
    chat: ChatDependencies;
}

type Target = ContextNode | Uri | undefined;

function describe(error: unknown): string {
    if (error instanceof ResponseError) {
        return error.message;
    }
    return error instanceof Error ? error.message : String(error);
}

/** Wraps a handler so that a failure becomes one error message and a log line (a cancel, just the log line). */
export function safely<A extends unknown[]>(name: string, handler: (...args: A) => Promise<unknown>): (...args: A) => Promise<void> {
    return async (...args: A) => {
        traceInfo(`Command ${name}`);
        try {
            await handler(...args);
        } catch (error) {
            if (isRequestCancelled(error)) {
                traceInfo(`${name} cancelled`);
                return;
            }
            traceError(`${name} failed: ${describe(error)}`);
            void showErrorMessage(`Ephemeral Context: ${describe(error)}`);
        }
    };
}

function isItemNode(target: Target): target is ItemNode {
    return typeof target === 'object' && target !== null && 'type' in target && target.type === 'item';
}

/** The uri a command acts on: the node's, the explorer's, or the active editor's. */
function targetUri(target: Target): string | undefined {
    if (isItemNode(target)) {
        return target.item.uri ?? undefined;
    }
    if (target instanceof Uri) {
        return target.toString();
    }
    return window.activeTextEditor?.document.uri.toString();
}

function toSymbolLike(symbol: DocumentSymbol): SymbolLike {
    return { name: symbol.name, range: symbol.range, children: symbol.children.map(toSymbolLike) };
}

/** The symbol the editor's selection means, when it means one. */
async function selectedSymbol(editor: TextEditor): Promise<string | undefined> {
    const { selection, document } = editor;
    if (selection.isEmpty) {
        return undefined;
    }
    const named = selectedIdentifier(document.getText(selection));
    if (named) {
        return named;
    }
    const symbols = await executeCommand<(DocumentSymbol | SymbolInformation)[] | undefined>(
        'vscode.executeDocumentSymbolProvider',
        document.uri,
    );
    const hierarchical = (symbols ?? []).filter((s): s is DocumentSymbol => 'children' in s);
    return enclosingSymbolPath(hierarchical.map(toSymbolLike), selection);
}

export function registerCommands(deps: CommandDependencies): void {
    const { context, server, tree, apiKeys, channel, chat } = deps;

    const pin = async (params: PinParams): Promise<void> => {
        const item = normalizeItem((await server.request<PinResult>(Methods.pin, params)).item);
        window.setStatusBarMessage(
            `$(pinned) ${item.label}${params.symbol ? `::${params.symbol}` : ''} is in the context (${item.state}, ${item.tokens} tokens)`,
            4000,
        );
        await tree.refresh();
    };

    /** Pins each file, going on past a refused one; the refusals are reported together. */
    const pinEach = async (files: Uri[]): Promise<void> => {
        const refused: string[] = [];
        for (const file of files) {
            try {
                await pin({ uri: file.toString() });
            } catch (error) {
                refused.push(`${path.basename(file.fsPath)}: ${describe(error)}`);
            }
        }
        if (refused.length > 0) {
            throw new Error(`${refused.length} of ${files.length} files were not added. ${refused.join('; ')}`);
        }
    };

    /** From the Explorer, `selected` holds every selected file (`target` is the one right-clicked). */
    const addToContext = async (target?: Uri, selected?: Uri[]): Promise<void> => {
        const files = Array.isArray(selected) ? selected.filter((uri) => uri instanceof Uri) : [];
        if (files.length > 1) {
            await pinEach(files);
            return;
        }
        const editor = window.activeTextEditor;
        if (target instanceof Uri || !editor) {
            const uri = targetUri(target);
            if (!uri) {
                void showInformationMessage('Open a file (or pick one in the Explorer) to add it to the context.');
                return;
            }
            await pin({ uri });
            return;
        }
        const uri = editor.document.uri.toString();
        const symbol = await selectedSymbol(editor);
        if (!symbol) {
            await pin({ uri });
            return;
        }
        try {
            await pin({ uri, symbol });
        } catch (error) {
            if (!(error instanceof ResponseError && error.code === ErrorCodes.invalidParams)) {
                throw error;
            }
            // The selection named something the server does not know as a symbol: take the file.
            traceInfo(`Pinning ${symbol} failed (${error.message}); pinning the whole file`);
            await pin({ uri });
        }
    };

    /** The file a Pin or Unpin acts on, or undefined after telling the user why there is none. */
    const fileOf = (target?: Target): string | undefined => {
        const uri = targetUri(target);
        if (!uri) {
            void showInformationMessage('Only files can be pinned: open one or pick it in the Context view.');
        }
        return uri;
    };

    const pinTarget = async (target?: Target): Promise<void> => {
        const uri = fileOf(target);
        if (uri) {
            await pin({ uri });
        }
    };

    const unpinTarget = async (target?: Target): Promise<void> => {
        const uri = fileOf(target);
        if (uri) {
            await server.request<PinResult>(Methods.unpin, { uri });
            await tree.refresh();
        }
    };

    const drop = async (target?: Target): Promise<void> => {
        let params: DropParams | undefined;
        if (isItemNode(target)) {
            params = { id: target.item.id };
        } else if (target instanceof Uri || window.activeTextEditor) {
            params = { uri: targetUri(target) as string };
        } else if (tree.snapshot.length === 0) {
            // The view is also emptied while the server is down: say which it is.
            if (server.state.kind !== 'running') {
                throw new Error(notRunningMessage('Ephemeral Context', server.state));
            }
            void showInformationMessage('The context is empty: there is nothing to drop.');
        } else {
            const picked = await window.showQuickPick(
                tree.snapshot.map((item) => ({ label: item.label, description: `${item.kind} · ${item.state} · ${item.tokens} tok`, id: item.id })),
                { placeHolder: 'Drop which item from the context?' },
            );
            params = picked ? { id: picked.id } : undefined;
        }
        if (!params) {
            return;
        }
        const dropped = (await server.request<DropResult>(Methods.drop, params)).dropped ?? [];
        window.setStatusBarMessage(
            dropped.length ? `Dropped ${dropped.length} item(s) from the context` : 'Nothing to drop: it was not in the context',
            4000,
        );
        await tree.refresh();
    };

    const open = async (target?: Target): Promise<void> => {
        if (!isItemNode(target)) {
            return;
        }
        if (target.item.uri) {
            await window.showTextDocument(Uri.parse(target.item.uri), { preview: true });
            return;
        }
        const hydrated = await server.request<HydrateResult>(Methods.hydrate, { id: target.item.id });
        const document = await workspace.openTextDocument({ content: hydrated.text, language: 'plaintext' });
        await window.showTextDocument(document, { preview: true });
    };

    const replay = async (): Promise<void> => {
        const projects = path.join(os.homedir(), '.claude', 'projects');
        const picked = await window.showOpenDialog({
            canSelectMany: false,
            openLabel: 'Replay',
            title: 'Replay a Claude Code session',
            filters: { 'Claude Code transcripts': ['jsonl'] },
            defaultUri: fs.existsSync(projects) ? Uri.file(projects) : undefined,
        });
        const file = picked?.[0];
        if (!file) {
            return;
        }
        const report = await withProgress(
            { location: ProgressLocation.Notification, title: `Replaying ${path.basename(file.fsPath)}…`, cancellable: true },
            (_progress, token) => server.request<unknown>(Methods.replay, { path: file.fsPath }, token),
        );
        showReplayReport(context.extensionUri, file.fsPath, report);
    };

    const setApiKey = async (): Promise<void> => {
        const key = await window.showInputBox({
            title: 'Anthropic API key',
            prompt: "Kept in VS Code's secret storage, never in settings; handed to the server as ANTHROPIC_API_KEY. Leave empty to remove the stored key.",
            placeHolder: 'sk-ant-…',
            password: true,
            ignoreFocusOut: true,
        });
        if (key === undefined) {
            return;
        }
        // The server restarts on the key store's change event (ServerManager), in every window.
        if (key.trim()) {
            await apiKeys.set(key.trim());
            void showInformationMessage('API key stored; restarting the Ephemeral Context server to use it.');
        } else {
            await apiKeys.clear();
            void showInformationMessage('Stored API key removed.');
        }
    };

    const handlers: [string, (...args: any[]) => Promise<unknown>][] = [
        [Commands.ask, async () => ChatPanel.createOrShow(chat)],
        [Commands.addToContext, addToContext],
        [Commands.pin, pinTarget],
        [Commands.unpin, unpinTarget],
        [Commands.drop, drop],
        [Commands.open, open],
        [Commands.showContext, async () => executeCommand(`${CONTEXT_VIEW_ID}.focus`)],
        [Commands.refreshContext, () => tree.refresh()],
        [Commands.replay, replay],
        [Commands.setApiKey, setApiKey],
        [Commands.restart, async () => server.requestRestart('Restart Server command')],
        [Commands.showLog, async () => channel.show()],
    ];
    for (const [id, handler] of handlers) {
        context.subscriptions.push(registerCommand(id, safely(id, handler)));
    }
}
