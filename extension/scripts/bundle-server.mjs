// Builds the server's wheel from the repository into server/, so the .vsix carries it and the
// extension can install the server by itself (src/common/install.ts). The Python that builds
// it: $ECTX_PYTHON, else the repository's .venv, else python3 on PATH; pip fetches the build
// backend (hatchling) from the package index as for any source build.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const extensionDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repo = resolve(extensionDir, '..');
const outDir = join(extensionDir, 'server');
const venvPython = join(repo, '.venv', 'bin', 'python');
const python = process.env.ECTX_PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');

rmSync(outDir, { recursive: true, force: true });
execFileSync(python, ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '--wheel-dir', outDir, repo], { stdio: 'inherit' });
const wheels = readdirSync(outDir).filter((name) => /^ephemeral_context-.+\.whl$/.test(name));
if (wheels.length !== 1) {
    throw new Error(`expected one ephemeral_context wheel in ${outDir}, found: ${wheels.join(', ') || 'none'}`);
}
console.log(`bundled ${join('server', wheels[0])}`);
