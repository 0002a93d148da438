/**
 * Just enough of the `vscode` module, and of vscode-languageclient/node (which needs the real
 * one), to unit-test the extension-host classes without a workbench. Import it before them:
 * it answers `require` for both. Settings come from `settings`; shown messages land in `shown`.
 */
import Module from 'node:module';

type Listener<T> = (value: T) => unknown;

class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>) => {
        this.listeners.push(listener);
        return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    };
    fire(value: T): void {
        this.listeners.forEach((listener) => listener(value));
    }
    dispose(): void {
        this.listeners = [];
    }
}

/** A file URI: enough for `instanceof Uri`, fsPath, toString and the static constructors used. */
class Uri {
    private constructor(readonly fsPath: string) {}
    static file(fsPath: string): Uri {
        return new Uri(fsPath);
    }
    static parse(uri: string): Uri {
        return new Uri(decodeURIComponent(uri.replace(/^file:\/\//, '')));
    }
    static joinPath(base: Uri, ...parts: string[]): Uri {
        return new Uri([base.fsPath, ...parts].join('/'));
    }
    toString(): string {
        return `file://${encodeURI(this.fsPath).replace(/#/g, '%23')}`;
    }
}

export const settings: Record<string, unknown> = {};
/** The handlers given to commands.registerCommand, by command id. */
export const registeredCommands = new Map<string, (...args: unknown[]) => unknown>();
/** Fire it to add or remove a workspace folder. */
export const workspaceFoldersChanged = new EventEmitter<unknown>();
export const shown: string[] = [];

/** The webview panels created, each with the messages posted to it and a way to send it one. */
export const panels: { posted: unknown[]; receive(message: unknown): void }[] = [];

function createWebviewPanel() {
    const received = new EventEmitter<unknown>();
    const record = { posted: [] as unknown[], receive: (message: unknown) => received.fire(message) };
    panels.push(record);
    return {
        webview: {
            cspSource: 'vscode-webview:',
            asWebviewUri: (uri: unknown) => uri,
            postMessage: async (message: unknown) => record.posted.push(message),
            onDidReceiveMessage: received.event,
        },
        onDidDispose: new EventEmitter<void>().event,
        reveal: () => undefined,
        dispose: () => undefined,
    };
}

const show = async (message: string) => {
    shown.push(message);
    return undefined;
};

const fakeVscode = {
    EventEmitter,
    ProgressLocation: { Notification: 15 },
    Uri,
    window: {
        showErrorMessage: show,
        showWarningMessage: show,
        showInformationMessage: show,
        createWebviewPanel,
        activeTextEditor: undefined,
        showQuickPick: async (items: unknown[]) => {
            shown.push(`quick pick of ${items.length}`);
            return undefined;
        },
        setStatusBarMessage: () => ({ dispose: () => undefined }),
    },
    ViewColumn: { One: 1, Beside: -2 },
    CancellationTokenSource: class {},
    workspace: {
        workspaceFolders: undefined,
        onDidChangeWorkspaceFolders: workspaceFoldersChanged.event,
        asRelativePath: (uri: { fsPath: string }) => uri.fsPath,
        getConfiguration: () => ({ get: (key: string) => settings[key], inspect: () => undefined }),
    },
    commands: {
        executeCommand: async () => undefined,
        registerCommand: (id: string, handler: (...args: unknown[]) => unknown) => {
            registeredCommands.set(id, handler);
            return { dispose: () => registeredCommands.delete(id) };
        },
    },
    extensions: { getExtension: () => undefined },
};

const State = { Stopped: 1, Running: 2, Starting: 3 };

/** The handlers of the latest client, by method: call one to play a server notification. */
export const serverNotifications = new Map<string, (params: unknown) => void>();

/** A client whose server starts at once and answers every request with `{}`. */
class FakeLanguageClient {
    state = State.Stopped;
    async start(): Promise<void> {
        this.state = State.Running;
    }
    needsStop(): boolean {
        return this.state === State.Running;
    }
    async stop(): Promise<void> {
        this.state = State.Stopped;
    }
    async dispose(): Promise<void> {}
    onNotification(method: string, handler: (params: unknown) => void) {
        serverNotifications.set(method, handler);
        return { dispose: () => undefined };
    }
    async sendRequest(): Promise<unknown> {
        return {};
    }
}

export class ResponseError extends Error {
    constructor(
        readonly code: number,
        message: string,
    ) {
        super(message);
    }
}

const fakeClient = {
    LanguageClient: FakeLanguageClient,
    ResponseError,
    State,
    CloseAction: { DoNotRestart: 1 },
    ErrorAction: { Continue: 1 },
    RevealOutputChannelOn: { Never: 4 },
};

const fakes: Record<string, unknown> = { vscode: fakeVscode, 'vscode-languageclient/node': fakeClient };
const moduleWithLoad = Module as unknown as { _load(request: string, ...rest: unknown[]): unknown };
const load = moduleWithLoad._load;
moduleWithLoad._load = function (request: string, ...rest: unknown[]) {
    return request in fakes ? fakes[request] : load.call(this, request, ...rest);
};
