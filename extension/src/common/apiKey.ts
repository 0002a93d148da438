/**
 * The Anthropic API key, kept in VS Code's SecretStorage (never in settings). The server gets
 * it as ANTHROPIC_API_KEY in its environment; a key already in the window's environment is
 * used when none is stored.
 */
import { Disposable, Event, EventEmitter, SecretStorage } from 'vscode';
import { API_KEY_SECRET } from './constants';

export class ApiKeyStore {
    private readonly changed = new EventEmitter<void>();
    readonly onDidChange: Event<void> = this.changed.event;
    private readonly listener: Disposable;

    constructor(private readonly secrets: SecretStorage) {
        this.listener = secrets.onDidChange((event) => {
            if (event.key === API_KEY_SECRET) {
                this.changed.fire();
            }
        });
    }

    async get(): Promise<string | undefined> {
        return (await this.secrets.get(API_KEY_SECRET)) || process.env.ANTHROPIC_API_KEY || undefined;
    }

    async has(): Promise<boolean> {
        return (await this.get()) !== undefined;
    }

    async set(key: string): Promise<void> {
        await this.secrets.store(API_KEY_SECRET, key);
    }

    async clear(): Promise<void> {
        await this.secrets.delete(API_KEY_SECRET);
    }

    dispose(): void {
        this.listener.dispose();
        this.changed.dispose();
    }
}
