/**
 * The Ask Claude panel's page script (runs inside the webview, bundled as an IIFE). Builds the
 * prompt box and the transcript with DOM calls only (model text is set as textContent, never
 * parsed as HTML), appends streamed text as it arrives, and lists the files and symbols the
 * model read, the steps of its sub-agents (muted lines apart from the answer) and the edits
 * it made.
 */
import { AskProgress, AskResult, SubagentProgress } from '../../common/protocol';
import { describeSubagentStep, describeToolUse, subagentName, ToExtension, ToWebview } from '../messages';

declare function acquireVsCodeApi(): { postMessage(message: ToExtension): void };

const vscode = acquireVsCodeApi();

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className) {
        node.className = className;
    }
    if (text !== undefined) {
        node.textContent = text;
    }
    return node;
}

interface Turn {
    root: HTMLElement;
    /** Set when a model call ends (a tool call or its usage): the next text starts a new paragraph. */
    paragraphBreak: boolean;
    answer: HTMLElement;
    subagents: HTMLElement;
    reads: HTMLUListElement;
    edits: HTMLUListElement;
    status: HTMLElement;
    seen: Set<string>;
}

const app = document.getElementById('app') as HTMLElement;
const notice = el('div', 'notice');
notice.id = 'notice';
notice.hidden = true;
const transcript = el('section', 'transcript');
transcript.id = 'transcript';
const form = el('form', 'prompt-form');
const prompt = el('textarea', 'prompt');
prompt.id = 'prompt';
prompt.rows = 3;
prompt.placeholder = 'Ask Claude about this workspace (Enter to send, Shift+Enter for a new line)';
prompt.setAttribute('aria-label', 'Prompt');
const buttons = el('div', 'buttons');
const send = el('button', 'primary', 'Ask');
send.id = 'send';
send.type = 'submit';
const cancel = el('button', 'secondary', 'Cancel');
cancel.id = 'cancel';
cancel.type = 'button';
cancel.hidden = true;
const fresh = el('button', 'secondary', 'New Conversation');
fresh.id = 'new';
fresh.type = 'button';
buttons.append(send, cancel, fresh);
form.append(prompt, buttons);
app.append(notice, transcript, form);

let current: Turn | undefined;
let hasApiKey = true;

function setRunning(running: boolean): void {
    send.disabled = running;
    cancel.hidden = !running;
    prompt.disabled = running;
}

function showNotice(message: string, withKeyButton: boolean): void {
    notice.replaceChildren(el('span', undefined, message));
    if (withKeyButton) {
        const button = el('button', 'primary', 'Set API Key');
        button.id = 'set-api-key';
        button.type = 'button';
        button.addEventListener('click', () => vscode.postMessage({ type: 'setApiKey' }));
        notice.append(' ', button);
    }
    notice.hidden = false;
}

function startTurn(text: string): Turn {
    const root = el('article', 'turn');
    root.append(el('div', 'user', text));
    const answer = el('div', 'answer');
    const subagents = el('div', 'subagents');
    subagents.hidden = true;
    const readsBox = el('details', 'reads');
    readsBox.open = true;
    readsBox.append(el('summary', undefined, 'Read'));
    const reads = el('ul');
    readsBox.append(reads);
    readsBox.hidden = true;
    const editsBox = el('div', 'edits');
    editsBox.append(el('div', 'label', 'Edits'));
    const edits = el('ul');
    editsBox.append(edits);
    editsBox.hidden = true;
    const status = el('div', 'status', 'Thinking…');
    root.append(answer, subagents, readsBox, editsBox, status);
    transcript.append(root);
    root.scrollIntoView({ block: 'end' });
    return { root, answer, subagents, reads, edits, status, seen: new Set(), paragraphBreak: false };
}

function addRead(turn: Turn, tool: string, input: Record<string, unknown>): void {
    const entry = describeToolUse(tool, input);
    if (!entry || turn.seen.has(entry.label)) {
        return;
    }
    turn.seen.add(entry.label);
    const li = el('li', `read ${entry.kind}`, entry.label);
    turn.reads.append(li);
    (turn.reads.parentElement as HTMLElement).hidden = false;
}

function addSubagentStep(turn: Turn, step: SubagentProgress): void {
    const line = describeSubagentStep(step);
    turn.status.textContent = step.event === 'end' ? 'Thinking…' : `Sub-agent ${subagentName(step.agent)} working…`;
    if (!line) {
        return;
    }
    const className = `subagent-step ${line.kind}`;
    if (line.detail === undefined) {
        turn.subagents.append(el('div', className, line.text));
    } else {
        const box = el('details', className);
        box.append(el('summary', undefined, line.text), el('div', 'subagent-detail', line.detail));
        turn.subagents.append(box);
    }
    turn.subagents.hidden = false;
}

function addEdit(turn: Turn, uri: string, applied: boolean, label: string | undefined): void {
    const li = el('li', applied ? 'edit applied' : 'edit rejected');
    const link = el('a', undefined, label ?? decodeURIComponent(uri.replace(/^file:\/\//, '')));
    link.href = '#';
    link.addEventListener('click', (event) => {
        event.preventDefault();
        vscode.postMessage({ type: 'openUri', uri });
    });
    li.append(applied ? '✓ ' : '✗ ', link, applied ? ' (applied; undo in the editor)' : ' (not applied)');
    turn.edits.append(li);
    (turn.edits.parentElement as HTMLElement).hidden = false;
}

function onProgress(event: AskProgress, label: string | undefined): void {
    const turn = current;
    if (!turn) {
        return;
    }
    switch (event.kind) {
        case 'text':
            if (turn.paragraphBreak && turn.answer.textContent) {
                turn.answer.append('\n\n');
            }
            turn.paragraphBreak = false;
            turn.answer.append(event.text);
            turn.status.textContent = 'Answering…';
            break;
        case 'toolUse':
            turn.paragraphBreak = true;
            addRead(turn, event.tool, event.input);
            turn.status.textContent = `Using ${event.tool}…`;
            break;
        case 'toolResult':
            if (event.isError) {
                turn.root.append(el('div', 'tool-error', `${event.tool}: ${event.text}`));
            }
            break;
        case 'edit':
            addEdit(turn, event.uri, event.applied, label);
            break;
        case 'usage':
            turn.paragraphBreak = true;
            break;
        case 'subagent':
            addSubagentStep(turn, event);
            break;
    }
    turn.root.scrollIntoView({ block: 'end' });
}

function onDone(result: AskResult): void {
    const turn = current;
    if (!turn) {
        return;
    }
    if (!turn.answer.textContent) {
        turn.answer.textContent = result.text;
    }
    const u = result.usage;
    turn.status.textContent =
        `Done (${result.stopReason}) · ${result.calls} call${result.calls === 1 ? '' : 's'} · ` +
        `${u.cacheReadInputTokens} cache read, ${u.cacheCreationInputTokens} cache write, ${u.inputTokens} input, ${u.outputTokens} output tokens`;
    turn.status.classList.add('done');
    current = undefined;
    setRunning(false);
}

function onFailed(message: string, cancelled: boolean): void {
    if (current) {
        current.status.textContent = message;
        current.status.classList.add(cancelled ? 'cancelled' : 'error');
        current = undefined;
    } else {
        showNotice(message, !hasApiKey);
    }
    setRunning(false);
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
    const message = event.data;
    switch (message.type) {
        case 'state':
            hasApiKey = message.hasApiKey;
            if (!message.hasApiKey) {
                showNotice(
                    'No Anthropic API key is set, so Claude cannot be asked yet. Set one with "Ephemeral Context: Set API Key"; it is kept in VS Code\'s secret storage, never in settings.',
                    true,
                );
            } else if (!message.serverRunning) {
                showNotice(message.serverMessage, false);
            } else {
                notice.hidden = true;
            }
            break;
        case 'started':
            current = startTurn(message.prompt);
            setRunning(true);
            break;
        case 'progress':
            onProgress(message.event, message.label);
            break;
        case 'done':
            onDone(message.result);
            break;
        case 'failed':
            onFailed(message.message, message.cancelled);
            break;
        case 'cleared':
            transcript.replaceChildren();
            current = undefined;
            setRunning(false);
            break;
    }
});

form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (text) {
        vscode.postMessage({ type: 'ask', prompt: text });
        prompt.value = '';
    }
});
prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
    }
});
cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
fresh.addEventListener('click', () => vscode.postMessage({ type: 'newConversation' }));
vscode.postMessage({ type: 'ready' });
