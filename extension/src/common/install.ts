/**
 * The server's private virtual environment in the extension's global storage, so the .vsix
 * installs the server by itself: when the chosen Python lacks the server package, a venv is
 * created with that Python and given the wheel this .vsix carries (server/*.whl, built by the
 * package script; its dependencies come from the user's package index), or
 * `ephemeralContext.serverPackageSpec` when set. A marker file names what was installed, so
 * later starts reuse the venv and a new extension version (a new wheel) installs again. Every
 * line the tools print goes to the log.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CancellationToken, Progress } from 'vscode';
import { EXTENSION_ROOT_DIR } from './constants';
import { traceError, traceInfo, traceLog } from './log/logging';
import { checkServerPackage } from './pythonProbe';

/** What an install came to: the venv's Python, or why not. */
export type InstallResult = { kind: 'installed'; command: string[] } | { kind: 'failed'; message: string } | { kind: 'cancelled' };

/** pip's lines worth showing in the progress notification (the log gets every line). */
const PIP_PROGRESS = /^(Processing|Collecting|Downloading|Installing|Successfully)\b/;

/** The server wheel this .vsix carries, or undefined in a build without one. */
export function bundledWheel(root: string = EXTENSION_ROOT_DIR): string | undefined {
    const dir = path.join(root, 'server');
    const wheels = fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.endsWith('.whl')) : [];
    return wheels.length > 0 ? path.join(dir, wheels.sort().at(-1) as string) : undefined;
}

/** Runs a command to completion, logging its output; resolves with its exit code (-1 when cancelled). */
function run(command: string, args: string[], token: CancellationToken, onLine: (line: string) => void = () => {}): Promise<number> {
    traceInfo(`> ${command} ${args.join(' ')}`);
    return new Promise((resolve) => {
        const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        const log = (chunk: Buffer) =>
            chunk
                .toString()
                .split(/\r?\n/)
                .filter(Boolean)
                .forEach((line) => {
                    traceLog(line);
                    onLine(line);
                });
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

export class ServerVenv {
    readonly dir: string;
    private readonly marker: string;

    constructor(storageDir: string) {
        this.dir = path.join(storageDir, 'server-venv');
        this.marker = path.join(this.dir, '.ectx-installed');
    }

    get python(): string {
        return process.platform === 'win32' ? path.join(this.dir, 'Scripts', 'python.exe') : path.join(this.dir, 'bin', 'python');
    }

    /** True when the venv holds `spec` (as last installed) and its Python imports `module`. */
    async holds(spec: string, module: string): Promise<boolean> {
        const installed = fs.existsSync(this.marker) ? fs.readFileSync(this.marker, 'utf-8') : undefined;
        return installed === spec && (await checkServerPackage([this.python], module)).kind === 'ok';
    }

    /** Creates the venv with `basePython` when it is not there, then pip-installs `spec` into it. */
    async install(
        basePython: string[],
        spec: string,
        progress: Progress<{ message?: string }>,
        token: CancellationToken,
    ): Promise<InstallResult> {
        const [executable, ...args] = basePython;
        if (!fs.existsSync(this.python)) {
            fs.mkdirSync(path.dirname(this.dir), { recursive: true });
            progress.report({ message: `creating a virtual environment in ${this.dir}` });
            const code = await run(executable, [...args, '-m', 'venv', this.dir], token);
            if (code !== 0) {
                fs.rmSync(this.dir, { recursive: true, force: true });
                return code === -1
                    ? { kind: 'cancelled' }
                    : {
                          kind: 'failed',
                          message:
                              `${basePython.join(' ')} -m venv failed (exit code ${code}); on Debian or Ubuntu ` +
                              'install python3-venv. The log has the output.',
                      };
            }
        }
        progress.report({ message: `installing ${path.basename(spec)} and its dependencies` });
        fs.rmSync(this.marker, { force: true });
        const report = (line: string) => PIP_PROGRESS.test(line) && progress.report({ message: line.slice(0, 120) });
        const code = await run(this.python, ['-m', 'pip', 'install', '--upgrade', spec], token, report);
        if (code !== 0) {
            return code === -1
                ? { kind: 'cancelled' }
                : { kind: 'failed', message: `pip could not install ${path.basename(spec)} (exit code ${code}); the log has pip's output.` };
        }
        fs.writeFileSync(this.marker, spec, 'utf-8');
        return { kind: 'installed', command: [this.python] };
    }
}
