/**
 * The extension's logger: one LogOutputChannel (created once in activate) that also serves as
 * the language client's output and trace channel, so the server's stderr, its
 * window/logMessage lines and the extension's own messages read in one place. Never console.log.
 */
import * as util from 'node:util';
import { Disposable, LogOutputChannel } from 'vscode';

type Arguments = unknown[];

class OutputChannelLogger {
    constructor(private readonly channel: LogOutputChannel) {}

    traceLog(...data: Arguments): void {
        this.channel.appendLine(util.format(...data));
    }
    traceError(...data: Arguments): void {
        this.channel.error(util.format(...data));
    }
    traceWarn(...data: Arguments): void {
        this.channel.warn(util.format(...data));
    }
    traceInfo(...data: Arguments): void {
        this.channel.info(util.format(...data));
    }
    traceVerbose(...data: Arguments): void {
        this.channel.debug(util.format(...data));
    }
}

let channel: OutputChannelLogger | undefined;

/** Routes the trace* functions to `logChannel` until the returned disposable is disposed. */
export function registerLogger(logChannel: LogOutputChannel): Disposable {
    channel = new OutputChannelLogger(logChannel);
    return { dispose: () => (channel = undefined) };
}

export function traceLog(...args: Arguments): void {
    channel?.traceLog(...args);
}
export function traceError(...args: Arguments): void {
    channel?.traceError(...args);
}
export function traceWarn(...args: Arguments): void {
    channel?.traceWarn(...args);
}
export function traceInfo(...args: Arguments): void {
    channel?.traceInfo(...args);
}
export function traceVerbose(...args: Arguments): void {
    channel?.traceVerbose(...args);
}
