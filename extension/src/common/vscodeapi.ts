/**
 * Thin wrappers over the VS Code API calls the other modules make, so those modules can be
 * stubbed in tests and the API surface we depend on is visible in one place.
 */
import {
    commands,
    ConfigurationScope,
    Disposable,
    extensions,
    LogOutputChannel,
    ProgressOptions,
    Progress,
    StatusBarAlignment,
    StatusBarItem,
    window,
    workspace,
    WorkspaceConfiguration,
    WorkspaceFolder,
    ConfigurationChangeEvent,
    CancellationToken,
} from 'vscode';

export function createOutputChannel(name: string): LogOutputChannel {
    return window.createOutputChannel(name, { log: true });
}

export function getConfiguration(section: string, scope?: ConfigurationScope): WorkspaceConfiguration {
    return workspace.getConfiguration(section, scope);
}

export function registerCommand(command: string, callback: (...args: any[]) => unknown): Disposable {
    return commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...rest: unknown[]): Thenable<T> {
    return commands.executeCommand<T>(command, ...rest);
}

export function onDidChangeConfiguration(handler: (e: ConfigurationChangeEvent) => unknown): Disposable {
    return workspace.onDidChangeConfiguration(handler);
}

export function getWorkspaceFolders(): readonly WorkspaceFolder[] {
    return workspace.workspaceFolders ?? [];
}

export function onDidChangeWorkspaceFolders(handler: () => unknown): Disposable {
    return workspace.onDidChangeWorkspaceFolders(handler);
}

export function isVirtualWorkspace(): boolean {
    return getWorkspaceFolders().some((folder) => folder.uri.scheme !== 'file');
}

export function createStatusBarItem(id: string, priority: number): StatusBarItem {
    return window.createStatusBarItem(id, StatusBarAlignment.Right, priority);
}

export function getExtension<T>(id: string): { isActive: boolean; activate(): Thenable<T>; exports: T } | undefined {
    return extensions.getExtension<T>(id);
}

export function onDidChangeExtensions(handler: () => unknown): Disposable {
    return extensions.onDidChange(handler);
}

export function withProgress<R>(
    options: ProgressOptions,
    task: (progress: Progress<{ message?: string; increment?: number }>, token: CancellationToken) => Thenable<R>,
): Thenable<R> {
    return window.withProgress(options, task);
}

export function showErrorMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
    return window.showErrorMessage(message, ...items);
}

export function showWarningMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
    return window.showWarningMessage(message, ...items);
}

export function showInformationMessage<T extends string>(message: string, ...items: T[]): Thenable<T | undefined> {
    return window.showInformationMessage(message, ...items);
}

export function openSettings(query: string): Thenable<unknown> {
    return commands.executeCommand('workbench.action.openSettings', query);
}
