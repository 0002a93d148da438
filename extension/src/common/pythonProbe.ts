/**
 * Asks an interpreter, in one short subprocess, whether it can run the server: its version
 * and whether the server's module imports. It imports the module rather than only finding
 * it: a package whose dependencies are missing is found, then fails at every start. No
 * `vscode` import, so it is unit-tested against real interpreters.
 */
import { execFile } from 'node:child_process';

/** The minimum Python the server supports (pyproject: requires-python >= 3.11). */
export const MIN_PYTHON: [number, number] = [3, 11];

/**
 * What `command` can do for the server: is it Python at all, and does the server module
 * import (`detail` says why not: the import's error).
 */
export type ServerCheck =
    | { kind: 'ok' }
    | { kind: 'noPython'; detail: string }
    | { kind: 'tooOld'; version: string }
    | { kind: 'missingPackage'; version: string; detail: string };

/** Runs the interpreter once to see whether it can import `module` (never throws). */
export function checkServerPackage(command: string[], module: string): Promise<ServerCheck> {
    const probe = [
        'import importlib, sys',
        'v = "%d.%d" % sys.version_info[:2]',
        `if sys.version_info < (${MIN_PYTHON.join(', ')}): print(v, "old"); sys.exit()`,
        'try:',
        `    importlib.import_module(${JSON.stringify(module)})`,
        'except Exception as error:',
        '    print(v, "missing", ("%s: %s" % (type(error).__name__, error)).replace("\\n", " "))',
        'else:',
        '    print(v, "ok")',
    ].join('\n');
    const [executable, ...args] = command;
    return new Promise((resolve) => {
        execFile(executable, [...args, '-c', probe], { timeout: 30_000 }, (error, stdout, stderr) => {
            if (error && !stdout) {
                resolve({ kind: 'noPython', detail: (stderr || error.message).trim() });
                return;
            }
            // The module's import may print too: the verdict is the last line.
            const lines = stdout.trim().split('\n');
            const [version, verdict, ...why] = lines[lines.length - 1].split(' ');
            if (verdict === 'ok') {
                resolve({ kind: 'ok' });
            } else if (verdict === 'old') {
                resolve({ kind: 'tooOld', version });
            } else {
                resolve({ kind: 'missingPackage', version, detail: why.join(' ') || (stderr || 'no answer').trim() });
            }
        });
    });
}
