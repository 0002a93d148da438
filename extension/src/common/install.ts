/**
 * Creates a virtual environment for the server (in the extension's global storage) and
 * pip-installs the server package into it, then points `ephemeralContext.interpreter` at it.
 * Runs under a cancellable progress notification; every line the tools print goes to the log.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { CancellationToken, ConfigurationTarget, Progress, Uri } from 'vscode';
import { SECTION } from './constants';
import { traceError, traceInfo, traceLog } from './log/logging';
import { getConfiguration, showErrorMessage, showInformationMessage } from './vscodeapi';

/** Runs a command to completion, logging its output; resolves with its exit code (or -1 when cancelled). */
function run(command: string, args: string[], token: CancellationToken): Promise<number> {
    traceInfo(`> ${command} ${args.join(' ')}`);
    return new Promise((resolve) => {
        const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        const log = (chunk: Buffer) => chunk.toString().split(/\r?\n/).filter(Boolean).forEach((line) => traceLog(line));
        child.stdout.on('data', log);
        child.stderr.on('data', log);
        const cancel = token.onCancellationRequested(() => child.kill());
        child.on('error', (error) => {
            traceError(`${command} did not start: ${error.message}`);
            cancel.dispose();
            resolve(127);
        });
        child.on('close', (code) => {
            cancel.dispose();
            resolve(token.isCancellationRequested ? -1 : (code ?? 1));
        });
    });
}

export function venvPython(venvDir: string): string {
    return process.platform === 'win32' ? path.join(venvDir, 'Scripts', 'python.exe') : path.join(venvDir, 'bin', 'python');
}

export async function createServerVenv(
    basePython: string[],
    storageDir: Uri,
    packageSpec: string,
    progress: Progress<{ message?: string }>,
    token: CancellationToken,
): Promise<void> {
    const venvDir = path.join(storageDir.fsPath, 'server-venv');
    await fs.mkdir(storageDir.fsPath, { recursive: true });
    const [executable, ...args] = basePython;
    const steps: [string, () => Promise<number>][] = [
        [`Creating a virtual environment in ${venvDir}`, () => run(executable, [...args, '-m', 'venv', venvDir], token)],
        [`Installing ${packageSpec}`, () => run(venvPython(venvDir), ['-m', 'pip', 'install', packageSpec], token)],
    ];
    for (const [message, step] of steps) {
        progress.report({ message });
        const code = await step();
        if (code === -1) {
            traceInfo('Server setup cancelled.');
            return;
        }
        if (code !== 0) {
            void showErrorMessage(`${message} failed (exit code ${code}); the log has pip's output.`);
            return;
        }
    }
    await getConfiguration(SECTION).update('interpreter', [venvPython(venvDir)], ConfigurationTarget.Global);
    void showInformationMessage(`The server is installed in ${venvDir}; starting it.`);
}
