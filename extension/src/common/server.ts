/**
 * Owns the language client's lifecycle: finds Python, checks that the server package is
 * importable (else installs the bundled wheel into a private venv, install.ts), starts
 * `python -m ephemeral_context serve` over stdio,
 * merges bursts of restart requests into one, restarts a crashed server with backoff, and
 * re-binds the `ephemeralContext/*` notification handlers on every new client. The views
 * listen to this module's events, never to a client directly.
 */
import { CancellationToken, Disposable, Event, EventEmitter, LogOutputChannel, ProgressLocation, Uri } from 'vscode';
import {
    CloseAction,
    ErrorAction,
    LanguageClient,
    LanguageClientOptions,
    RevealOutputChannelOn,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { CrashBackoff } from './backoff';
import {
    CRASH_RESTART_BASE_MS,
    CRASH_RESTART_MAX_MS,
    CRASH_RESTART_RESET_MS,
    SECTION,
    SERVER_RESTART_DELAY_MS,
} from './constants';
import { bundledWheel, ServerVenv } from './install';
import { traceError, traceInfo, traceLog } from './log/logging';
import { AskProgress, Methods, StatusResult, Usage } from './protocol';
import { getInterpreterDetails, InterpreterDetails } from './python';
import { checkServerPackage, MIN_PYTHON } from './pythonProbe';
import { ServerInfo } from './setup';
import { getSettings, getWindowSettings } from './settings';
import { ISettings, toServerSettings } from './settingValues';
import { normalizeUsage } from '../model/normalize';
import { notRunningMessage, ServerState } from '../model/statusText';
import {
    getWorkspaceFolders,
    isVirtualWorkspace,
    showErrorMessage,
    showInformationMessage,
    showWarningMessage,
    withProgress,
    openSettings,
} from './vscodeapi';

export interface ServerDependencies {
    info: ServerInfo;
    channel: LogOutputChannel;
    /** The Anthropic API key to hand to the server process, if any. */
    apiKey(): Promise<string | undefined>;
    /** Fires when the stored key changes, in this window or another: the process must be restarted to get it. */
    onDidChangeApiKey: Event<void>;
    /** Where a virtual environment created for the server lives. */
    storageDir: Uri;
}

export class ServerManager implements Disposable {
    private client: LanguageClient | undefined;
    private clientListeners: Disposable[] = [];
    private restartTimer: NodeJS.Timeout | undefined;
    private crashTimer: NodeJS.Timeout | undefined;
    private restarting: Promise<void> | undefined;
    private restartAgain = false;
    private disposed = false;
    private readonly backoff = new CrashBackoff({
        baseMs: CRASH_RESTART_BASE_MS,
        maxMs: CRASH_RESTART_MAX_MS,
        resetAfterMs: CRASH_RESTART_RESET_MS,
    });

    private readonly usageEmitter = new EventEmitter<Usage>();
    private readonly askEmitter = new EventEmitter<AskProgress>();
    private readonly stateEmitter = new EventEmitter<ServerState>();
    private currentState: ServerState = { kind: 'starting' };

    /** Every `ephemeralContext/usage` notification (and the status fetched after each start). */
    readonly onUsage: Event<Usage> = this.usageEmitter.event;
    /** Every `ephemeralContext/askProgress` notification. */
    readonly onAskProgress: Event<AskProgress> = this.askEmitter.event;
    readonly onState: Event<ServerState> = this.stateEmitter.event;

    private readonly keyListener: Disposable;

    constructor(private readonly deps: ServerDependencies) {
        this.keyListener = deps.onDidChangeApiKey(() => this.requestRestart('the API key changed'));
    }

    get state(): ServerState {
        return this.currentState;
    }

    /** Asks for a restart; a burst of calls within SERVER_RESTART_DELAY_MS becomes one restart. */
    requestRestart(reason: string): void {
        traceLog(`Restart requested: ${reason}`);
        this.backoff.reset();
        // Requests sent now would reach the old server: report the restart from the start.
        this.setState({ kind: 'starting' });
        if (this.restartTimer) {
            clearTimeout(this.restartTimer);
        }
        this.restartTimer = setTimeout(() => {
            this.restartTimer = undefined;
            void this.restart();
        }, SERVER_RESTART_DELAY_MS);
    }

    /** Stops the current client and starts a new one; concurrent calls queue one more run. */
    async restart(): Promise<void> {
        if (this.restarting) {
            this.restartAgain = true;
            return this.restarting;
        }
        this.restarting = (async () => {
            do {
                this.restartAgain = false;
                await this.stopClient();
                if (this.disposed) {
                    return;
                }
                try {
                    await this.startClient();
                } catch (error) {
                    // Not the process (its failures are handled in startClient): the steps before it.
                    this.scheduleCrashRestart(`it could not be started (${error instanceof Error ? error.message : String(error)})`);
                }
            } while (this.restartAgain && !this.disposed);
        })();
        try {
            await this.restarting;
        } finally {
            this.restarting = undefined;
        }
    }

    /**
     * Sends a request to the running server; rejects with a readable error when there is none,
     * and from the moment a restart is asked for: the old process, still up until the restart
     * runs, would forget what the request did (a pin).
     */
    async request<R>(method: string, params: object, token?: CancellationToken): Promise<R> {
        const client = this.client;
        if (!client || client.state !== State.Running || this.currentState.kind !== 'running') {
            throw new Error(notRunningMessage(this.deps.info.name, this.currentState));
        }
        return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
    }

    /** Pushes changed settings to the running server (workspace/didChangeConfiguration). */
    async pushSettings(): Promise<void> {
        if (this.client?.state === State.Running) {
            await this.client.sendNotification('workspace/didChangeConfiguration', {
                settings: { [SECTION]: toServerSettings(getWindowSettings()) },
            });
        }
    }

    async dispose(): Promise<void> {
        this.disposed = true;
        this.keyListener.dispose();
        clearTimeout(this.restartTimer);
        clearTimeout(this.crashTimer);
        await this.stopClient();
        this.usageEmitter.dispose();
        this.askEmitter.dispose();
        this.stateEmitter.dispose();
    }

    private setState(state: ServerState): void {
        this.currentState = state;
        this.stateEmitter.fire(state);
    }

    private async stopClient(): Promise<void> {
        clearTimeout(this.crashTimer);
        this.crashTimer = undefined;
        const client = this.client;
        this.client = undefined;
        this.clientListeners.forEach((listener) => listener.dispose());
        this.clientListeners = [];
        if (!client) {
            return;
        }
        try {
            if (client.needsStop()) {
                await client.stop(2000);
            }
        } catch (error) {
            traceError(`Stopping the server failed: ${String(error)}`);
        }
        await client.dispose().catch(() => undefined);
    }

    private async startClient(): Promise<void> {
        this.setState({ kind: 'starting' });
        const folder = getWorkspaceFolders()[0];
        const { settings, ignored } = getSettings(folder);
        if (ignored.length > 0) {
            this.explainIgnoredSettings(ignored);
        }
        let interpreter = await getInterpreterDetails(settings.interpreter, folder?.uri);
        if (!interpreter) {
            this.setState({ kind: 'noPython' });
            this.explainNoPython('No Python interpreter was found.');
            return;
        }
        const check = await checkServerPackage(interpreter.command, this.deps.info.serverModule);
        switch (check.kind) {
            case 'noPython':
                this.setState({ kind: 'noPython' });
                traceError(`${interpreter.command.join(' ')} did not run: ${check.detail}`);
                this.explainNoPython(`Python could not be run: ${interpreter.command.join(' ')}.`);
                return;
            case 'tooOld':
                this.setState({ kind: 'noPython' });
                this.explainNoPython(`${interpreter.command.join(' ')} is Python ${check.version}; the server needs ${MIN_PYTHON.join('.')} or later.`);
                return;
            case 'missingPackage':
                interpreter = await this.privateServer(interpreter.command, settings, check.detail);
                if (!interpreter) {
                    return;
                }
                break;
            case 'ok':
                break;
        }

        const client = this.createClient(interpreter.command, settings, await this.serverEnvironment());
        this.client = client;
        this.bindNotifications(client);
        traceInfo(`Starting ${interpreter.command.join(' ')} -m ${this.deps.info.module} serve (Python from ${interpreter.source})`);
        try {
            await client.start();
        } catch (error) {
            traceError(`The server failed to start: ${String(error)}`);
            this.scheduleCrashRestart(`it failed to start (${String(error)})`);
            return;
        }
        this.backoff.started(Date.now());
        this.setState({ kind: 'running' });
        try {
            this.usageEmitter.fire(normalizeUsage(await client.sendRequest<StatusResult>(Methods.status, {})));
        } catch (error) {
            traceError(`${Methods.status} failed: ${String(error)}`);
        }
    }

    private createClient(command: string[], settings: ISettings, env: NodeJS.ProcessEnv): LanguageClient {
        const [executable, ...pythonArgs] = command;
        const folder = getWorkspaceFolders()[0];
        const serverOptions: ServerOptions = {
            command: executable,
            args: [...pythonArgs, '-m', this.deps.info.module, 'serve'],
            options: { cwd: folder?.uri.fsPath, env },
        };
        let intentionalStop = false;
        const clientOptions: LanguageClientOptions = {
            documentSelector: isVirtualWorkspace()
                ? [{ language: '*' }]
                : [
                      { scheme: 'file', language: '*' },
                      { scheme: 'untitled', language: '*' },
                  ],
            outputChannel: this.deps.channel,
            traceOutputChannel: this.deps.channel,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: toServerSettings(settings),
            initializationFailedHandler: (error) => {
                traceError(`initialize failed: ${String(error)}`);
                return false;
            },
            errorHandler: {
                error: () => ({ action: ErrorAction.Continue, handled: true }),
                closed: () => {
                    if (!intentionalStop && this.client === client && !this.disposed) {
                        this.scheduleCrashRestart('the process exited');
                    }
                    return { action: CloseAction.DoNotRestart, handled: true };
                },
            },
            middleware: {
                workspace: {
                    // The server asks for section `ephemeralContext`; answer with only the keys it knows.
                    configuration: async (params, token, next) => {
                        const result = await next(params, token);
                        if (!Array.isArray(result)) {
                            return result;
                        }
                        return result.map((value, index) =>
                            params.items[index]?.section === SECTION ? toServerSettings(getWindowSettings()) : value,
                        );
                    },
                },
            },
        };
        const client = new LanguageClient(SECTION, this.deps.info.name, serverOptions, clientOptions);
        const stop = client.stop.bind(client);
        client.stop = (timeout?: number) => {
            intentionalStop = true;
            return stop(timeout);
        };
        return client;
    }

    private bindNotifications(client: LanguageClient): void {
        this.clientListeners.push(
            client.onNotification(Methods.usage, (usage: Usage) => {
                // Once a restart is asked for, the old process's figures would hide the restart.
                if (this.currentState.kind === 'running') {
                    this.usageEmitter.fire(normalizeUsage(usage));
                }
            }),
            client.onNotification(Methods.askProgress, (event: AskProgress) => this.askEmitter.fire(event)),
        );
    }

    private scheduleCrashRestart(why: string): void {
        if (this.crashTimer || this.disposed) {
            return;
        }
        const delay = this.backoff.crashed(Date.now());
        const message =
            `The ${this.deps.info.name} server stopped: ${why}. ` +
            `Restarting in ${Math.round(delay / 1000)} s (attempt ${this.backoff.crashes}); see the log for details.`;
        traceError(message);
        this.setState({ kind: 'crashed', restartInMs: delay, crashes: this.backoff.crashes });
        // One notification per streak of crashes (and one when the backoff tops out); the status
        // bar and the log carry every attempt.
        if (this.backoff.crashes === 1 || delay === CRASH_RESTART_MAX_MS) {
            void showWarningMessage(message, 'Show Log').then((choice) => choice && this.deps.channel.show());
        }
        this.crashTimer = setTimeout(() => {
            this.crashTimer = undefined;
            void this.restart();
        }, delay);
    }

    private explainIgnoredSettings(keys: string[]): void {
        const message = `${this.deps.info.name}: ${keys.join(', ')} ${keys.length === 1 ? 'has' : 'have'} a value of the wrong type; using the default.`;
        traceError(message);
        void showWarningMessage(message, 'Open Settings').then((choice) => choice && openSettings(keys[0]));
    }

    private explainNoPython(message: string): void {
        traceError(message);
        void showErrorMessage(
            `${this.deps.info.name}: ${message} Set "ephemeralContext.interpreter" or install Python 3.11+.`,
            'Open Settings',
            'Show Log',
        ).then((choice) => {
            if (choice === 'Open Settings') {
                void openSettings(`${SECTION}.interpreter`);
            } else if (choice === 'Show Log') {
                this.deps.channel.show();
            }
        });
    }

    /**
     * The private venv's Python, installing the server there first when it does not hold it
     * yet (the bundled wheel, or the serverPackageSpec setting); undefined when that failed.
     * `why` is the import error that sent us here.
     */
    private async privateServer(basePython: string[], settings: ISettings, why: string): Promise<InterpreterDetails | undefined> {
        const venv = new ServerVenv(this.deps.storageDir.fsPath);
        const spec = settings.serverPackageSpec || bundledWheel();
        const lacks = `${basePython.join(' ')} cannot import the "${this.deps.info.module}" package's server (${why})`;
        if (!spec) {
            this.setState({ kind: 'missingPackage' });
            this.explainMissingPackage(`${lacks}, and this build of the extension carries no server wheel: set "${SECTION}.serverPackageSpec".`);
            return undefined;
        }
        if (await venv.holds(spec, this.deps.info.serverModule)) {
            return { command: [venv.python], source: 'private' };
        }
        traceInfo(`${lacks}: installing ${spec} into ${venv.dir}`);
        this.setState({ kind: 'installing' });
        const result = await withProgress(
            { location: ProgressLocation.Notification, title: `${this.deps.info.name}: installing the server`, cancellable: true },
            (progress, token) => venv.install(basePython, spec, progress, token),
        );
        if (result.kind !== 'installed') {
            this.setState({ kind: 'missingPackage' });
            this.explainMissingPackage(result.kind === 'failed' ? result.message : 'The server install was cancelled.');
            return undefined;
        }
        void showInformationMessage(`${this.deps.info.name}: the server is installed in ${venv.dir}; starting it.`);
        return { command: result.command, source: 'private' };
    }

    private explainMissingPackage(message: string): void {
        traceError(message);
        void showErrorMessage(`${this.deps.info.name}: ${message} Run "Restart Server" to try again.`, 'Show Log', 'Open Settings').then(
            (choice) => {
                if (choice === 'Open Settings') {
                    void openSettings(`${SECTION}.serverPackageSpec`);
                } else if (choice === 'Show Log') {
                    this.deps.channel.show();
                }
            },
        );
    }

    /** The window's environment plus the API key from SecretStorage (never from settings). */
    private async serverEnvironment(): Promise<NodeJS.ProcessEnv> {
        const key = await this.deps.apiKey();
        return key ? { ...process.env, ANTHROPIC_API_KEY: key } : { ...process.env };
    }
}
