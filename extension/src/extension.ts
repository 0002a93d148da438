/**
 * Entry point: activate creates the log channel first, then the server manager, the views and
 * the commands (every disposable goes to context.subscriptions), wires the restart triggers
 * and starts the server; deactivate stops it.
 */
import { ExtensionContext, window } from 'vscode';
import { registerCommands } from './commands';
import { ApiKeyStore } from './common/apiKey';
import { CONTEXT_VIEW_ID } from './common/constants';
import { registerLogger, traceInfo } from './common/log/logging';
import { initializePython, onDidChangePythonInterpreter } from './common/python';
import { ServerManager } from './common/server';
import { needsRestart } from './common/settings';
import { loadServerInfo } from './common/setup';
import { createOutputChannel, onDidChangeConfiguration } from './common/vscodeapi';
import { ContextStatusBar } from './statusBar';
import { ContextTreeProvider } from './treeView';
import { CHAT_VIEW_TYPE, ChatDependencies, ChatPanel } from './webview/chatPanel';

let server: ServerManager | undefined;

export async function activate(context: ExtensionContext): Promise<void> {
    const info = loadServerInfo();
    const channel = createOutputChannel(info.name);
    context.subscriptions.push(channel, registerLogger(channel));
    traceInfo(`${info.name} extension ${context.extension.packageJSON.version} activating`);

    const apiKeys = new ApiKeyStore(context.secrets);
    server = new ServerManager({
        info,
        channel,
        apiKey: () => apiKeys.get(),
        onDidChangeApiKey: apiKeys.onDidChange,
        storageDir: context.globalStorageUri,
    });
    const tree = new ContextTreeProvider(server);
    const chat: ChatDependencies = {
        extensionUri: context.extensionUri,
        server,
        hasApiKey: () => apiKeys.has(),
        onDidChangeApiKey: apiKeys.onDidChange,
    };
    const current = server;
    context.subscriptions.push(
        apiKeys,
        server,
        tree,
        new ContextStatusBar(server),
        window.createTreeView(CONTEXT_VIEW_ID, { treeDataProvider: tree, showCollapseAll: true }),
        window.registerWebviewPanelSerializer(CHAT_VIEW_TYPE, {
            deserializeWebviewPanel: async (panel) => ChatPanel.revive(panel, chat),
        }),
        onDidChangeConfiguration((event) => {
            if (needsRestart(event)) {
                current.requestRestart('settings changed');
            } else if (event.affectsConfiguration('ephemeralContext')) {
                void current.pushSettings();
            }
        }),
        onDidChangePythonInterpreter(() => current.requestRestart('the Python interpreter changed')),
    );
    registerCommands({ context, server, tree, apiKeys, channel, chat });

    await initializePython(context.subscriptions);
    // Not awaited: a slow or failing server start never holds up the editor.
    void server.restart();
}

export async function deactivate(): Promise<void> {
    await server?.dispose();
    server = undefined;
}
