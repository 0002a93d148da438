/**
 * Asks an interpreter, in one short subprocess, whether it can run the server: its version
 * and whether the server's module is importable. No `vscode` import, so it is unit-tested
 * against real interpreters.
 */
import { execFile } from 'node:child_process';

/** The minimum Python the server supports (pyproject: requires-python >= 3.11). */
export const MIN_PYTHON: [number, number] = [3, 11];

/** What `command` can do for the server: is it Python at all, and is the server package importable. */
export type ServerCheck =
    | { kind: 'ok' }
    | { kind: 'noPython'; detail: string }
    | { kind: 'tooOld'; version: string }
    | { kind: 'missingPackage'; version: string };

/** Runs the interpreter once to see whether it can start the server (never throws). */
export function checkServerPackage(command: string[], module: string): Promise<ServerCheck> {
    const probe = [
        'import importlib.util, sys',
        'v = "%d.%d" % sys.version_info[:2]',
        `ok = sys.version_info >= (${MIN_PYTHON.join(', ')}) and importlib.util.find_spec("${module}") is not None`,
        'print(v, "ok" if ok else ("old" if sys.version_info < (' + MIN_PYTHON.join(', ') + ') else "missing"))',
    ].join('; ');
    const [executable, ...args] = command;
    return new Promise((resolve) => {
        execFile(executable, [...args, '-c', probe], { timeout: 30_000 }, (error, stdout, stderr) => {
            if (error && !stdout) {
                resolve({ kind: 'noPython', detail: (stderr || error.message).trim() });
                return;
            }
            const [version, verdict] = stdout.trim().split(/\s+/);
            if (verdict === 'ok') {
                resolve({ kind: 'ok' });
            } else if (verdict === 'old') {
                resolve({ kind: 'tooOld', version });
            } else {
                resolve({ kind: 'missingPackage', version });
            }
        });
    });
}
