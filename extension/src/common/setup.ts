/**
 * The server's name, Python module and pip package, read at run time from the `serverInfo`
 * block of package.json so they are spelled in one place.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EXTENSION_ROOT_DIR } from './constants';

export interface ServerInfo {
    name: string;
    module: string;
    /** The module `serve` runs: the interpreter that imports it has the server and its dependencies. */
    serverModule: string;
    pipPackage: string;
}

export function loadServerInfo(): ServerInfo {
    const packageJson = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT_DIR, 'package.json'), 'utf-8'));
    return packageJson.serverInfo as ServerInfo;
}
