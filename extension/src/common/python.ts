/**
 * Finds the Python that runs the server, in the order of Microsoft's python-tools extension
 * template: the `ephemeralContext.interpreter` setting, then the Python Environments extension's
 * API, then the Python extension's API, then `python3` on PATH. Changes reported by either
 * extension become one internal event. The APIs are typed here with only the members we call,
 * so neither extension is a build dependency.
 */
import { execFile } from 'node:child_process';
import { Disposable, Event, EventEmitter, Uri } from 'vscode';
import { traceError, traceLog, traceWarn } from './log/logging';
import { MIN_PYTHON } from './pythonProbe';
import { getExtension } from './vscodeapi';


/** Where the Python came from; 'private' is the venv the extension installed the server into. */
export type InterpreterSource = 'setting' | 'python-envs' | 'ms-python' | 'path' | 'private';

export interface InterpreterDetails {
    /** The command that starts Python: executable first, then any arguments. */
    command: string[];
    source: InterpreterSource;
}

/** ms-python.vscode-python-envs: the members we call. */
interface PythonEnvsApi {
    getEnvironment(scope: Uri | undefined): Promise<{ execInfo: { run: { executable: string; args?: string[] } } } | undefined>;
    onDidChangeEnvironment: Event<unknown>;
}

/** ms-python.python: the members we call. */
interface MsPythonApi {
    environments: {
        getActiveEnvironmentPath(resource?: Uri): { path: string };
        resolveEnvironment(
            env: { path: string } | string,
        ): Promise<{ executable: { uri: Uri | undefined }; version: { major?: number; minor?: number } | undefined } | undefined>;
        onDidChangeActiveEnvironmentPath: Event<unknown>;
    };
}

const changed = new EventEmitter<void>();
/** Fires when the interpreter chosen by either Python extension changes. */
export const onDidChangePythonInterpreter: Event<void> = changed.event;

let envsApi: PythonEnvsApi | undefined;
let msPythonApi: MsPythonApi | undefined;

async function activated<T>(id: string): Promise<T | undefined> {
    const extension = getExtension<T>(id);
    if (!extension) {
        return undefined;
    }
    try {
        return extension.isActive ? extension.exports : await extension.activate();
    } catch (error) {
        traceWarn(`Could not activate ${id}: ${String(error)}`);
        return undefined;
    }
}

/** Caches the API handles and subscribes to their change events (once per activation). */
export async function initializePython(disposables: Disposable[]): Promise<void> {
    envsApi = await activated<PythonEnvsApi>('ms-python.vscode-python-envs');
    msPythonApi = await activated<MsPythonApi>('ms-python.python');
    if (envsApi?.onDidChangeEnvironment) {
        disposables.push(envsApi.onDidChangeEnvironment(() => changed.fire()));
    }
    if (msPythonApi?.environments) {
        disposables.push(msPythonApi.environments.onDidChangeActiveEnvironmentPath(() => changed.fire()));
    }
    disposables.push(changed);
}

async function fromPythonEnvs(resource: Uri | undefined): Promise<string[] | undefined> {
    const environment = await envsApi?.getEnvironment(resource);
    const run = environment?.execInfo?.run;
    return run ? [run.executable, ...(run.args ?? [])] : undefined;
}

async function fromMsPython(resource: Uri | undefined): Promise<string[] | undefined> {
    const environments = msPythonApi?.environments;
    if (!environments) {
        return undefined;
    }
    const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(resource));
    const executable = resolved?.executable.uri?.fsPath;
    const version = resolved?.version;
    if (!executable) {
        return undefined;
    }
    if (version?.major !== undefined && version.minor !== undefined) {
        if (version.major < MIN_PYTHON[0] || (version.major === MIN_PYTHON[0] && version.minor < MIN_PYTHON[1])) {
            traceError(
                `The Python extension selected Python ${version.major}.${version.minor} (${executable}); ` +
                    `the server needs ${MIN_PYTHON.join('.')} or later. Set ephemeralContext.interpreter.`,
            );
            return undefined;
        }
    }
    return [executable];
}

/** Resolves `python3` on PATH to an absolute path, or undefined when there is none. */
function fromPath(): Promise<string[] | undefined> {
    return new Promise((resolve) => {
        execFile('python3', ['-c', 'import sys; print(sys.executable)'], { timeout: 15_000 }, (error, stdout) => {
            const executable = stdout.trim();
            resolve(error || !executable ? undefined : [executable]);
        });
    });
}

/** The interpreter to use for `resource`'s folder, or undefined when none was found. */
export async function getInterpreterDetails(
    settingCommand: string[],
    resource: Uri | undefined,
): Promise<InterpreterDetails | undefined> {
    if (settingCommand.length > 0) {
        return { command: settingCommand, source: 'setting' };
    }
    const candidates: [InterpreterSource, () => Promise<string[] | undefined>][] = [
        ['python-envs', () => fromPythonEnvs(resource)],
        ['ms-python', () => fromMsPython(resource)],
        ['path', fromPath],
    ];
    for (const [source, find] of candidates) {
        try {
            const command = await find();
            if (command) {
                traceLog(`Python from ${source}: ${command.join(' ')}`);
                return { command, source };
            }
        } catch (error) {
            traceWarn(`Looking for Python through ${source} failed: ${String(error)}`);
        }
    }
    return undefined;
}
