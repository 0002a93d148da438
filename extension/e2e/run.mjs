// Drives a running code-server (the real VS Code workbench) in Debian's headless Chromium with
// playwright-core, as a user would: opens the workspace, adds a file to the context and edits
// it, watching the status bar change each time, asks Claude (against the local fake Messages API) in the chat panel, sets the
// API key when the panel asks for one, checks the streamed answer, the files it read and the
// edit applied in the open editor, and the Context view. Called by tests/e2e/test_vscode.py
// with a JSON config file; prints one JSON line of observations on success, exits 1 on
// failure (naming the step), and always saves screenshots.
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const config = JSON.parse(readFileSync(process.argv[2], 'utf-8'));
const TIMEOUT = config.timeoutMs ?? 60_000;
mkdirSync(config.artifactsDir, { recursive: true });

const observations = { steps: [] };
let page;

/** Runs one named step; a failure says which step and keeps a screenshot of that moment. */
async function step(name, fn) {
    const started = Date.now();
    try {
        const result = await fn();
        observations.steps.push({ name, ms: Date.now() - started });
        return result;
    } catch (error) {
        if (page) {
            await page.screenshot({ path: join(config.artifactsDir, 'vscode-failure.png') }).catch(() => {});
        }
        throw new Error(`step "${name}" failed: ${error.message}`);
    }
}

const normalize = (text) => text.replace(/\u00a0/g, ' ');

/** The status-bar item this extension owns (its text is ours: "Context" or the usage line). */
function statusItem() {
    return page.locator('.statusbar-item').filter({ hasText: /Context|cached/ }).first();
}

async function statusText() {
    return normalize((await statusItem().innerText()).trim());
}

/**
 * The status text once it differs from `previous`; after TIMEOUT without a change, the
 * unchanged text (the test asserts on it last, so one stale figure does not hide the rest).
 * A loaded machine can keep the server's usage notification back for seconds: only a
 * figure that never moves waits the whole TIMEOUT.
 */
async function waitForStatusChange(previous) {
    const changed = await page.waitForFunction(
        ([before]) => {
            const items = [...document.querySelectorAll('.statusbar-item')];
            const ours = items.find((el) => /cached/.test(el.textContent ?? ''));
            return ours !== undefined && ours.textContent.replace(/\u00a0/g, ' ').trim() !== before;
        },
        [previous],
        { timeout: TIMEOUT },
    ).then(() => true, () => false);
    if (!changed) {
        observations.statusUnchanged = [...(observations.statusUnchanged ?? []), previous];
    }
    return statusText();
}

async function runCommand(title) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: TIMEOUT });
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first();
    await row.waitFor({ timeout: TIMEOUT });
    await row.click();
}

/** The webview frame (any panel's) that shows `selector`; webview frames carry no other name. */
async function findFrame(selector) {
    const deadline = Date.now() + TIMEOUT;
    while (Date.now() < deadline) {
        for (const frame of page.frames()) {
            if ((await frame.locator(selector).count().catch(() => 0)) > 0) {
                return frame;
            }
        }
        await page.waitForTimeout(250);
    }
    throw new Error(`no webview shows ${selector}`);
}

/** The text of the editor showing `marker` (Monaco renders spaces as U+00A0). */
async function editorText(marker) {
    const editors = page.locator('.part.editor .monaco-editor .view-lines');
    const count = await editors.count();
    for (let i = 0; i < count; i++) {
        const text = normalize(await editors.nth(i).innerText());
        if (text.includes(marker)) {
            return text;
        }
    }
    return '';
}

/** A broken setup: the status bar and a notification say what is wrong; the editor still works. */
async function failureFlow() {
    observations.status = await step('the status bar names the problem', async () => {
        await page.locator('.statusbar-item').filter({ hasText: config.failure.status }).first().waitFor({ timeout: TIMEOUT * 2 });
        return statusText();
    });
    observations.toast = await step('a notification explains it', async () => {
        const toast = page.locator('.notification-toast').filter({ hasText: config.failure.toast }).first();
        await toast.waitFor();
        return normalize(await toast.innerText());
    });
    if (config.failure.recovered) {
        observations.recovered = await step('the server comes back after the restarts', async () => {
            await page.locator('.statusbar-item').filter({ hasText: config.failure.recovered }).first().waitFor({ timeout: TIMEOUT * 2 });
            return statusText();
        });
    }
    await step('the editor still opens and edits files', async () => {
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(config.file);
        await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: config.file }).first().waitFor();
        await page.keyboard.press('Enter');
        const editor = page.locator('.part.editor .monaco-editor .view-lines').filter({ hasText: config.fileMarker });
        await editor.click();
        await page.keyboard.press('Control+End');
        await page.keyboard.type('# still editable');
        await editor.filter({ hasText: 'still editable' }).waitFor();
    });
    await page.screenshot({ path: join(config.artifactsDir, config.failure.screenshot) });
}

/** The whole user flow: status bar, add to context, edit, Ask Claude, Context view. */
async function userFlow() {
    observations.statusAtStart = await step('the status bar shows the server running with usage', async () => {
        await page.locator('.statusbar-item').filter({ hasText: 'cached' }).first().waitFor({ timeout: TIMEOUT * 2 });
        return statusText();
    });

    await step(`open ${config.file}`, async () => {
        await page.locator('.monaco-workbench').click({ position: { x: 800, y: 500 } }).catch(() => {});
        await page.keyboard.press('Control+P');
        const input = page.locator('.quick-input-widget input');
        await input.waitFor({ state: 'visible' });
        await input.fill(config.file);
        await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: config.file }).first().waitFor();
        await page.keyboard.press('Enter');
        await page.locator('.part.editor .monaco-editor .view-lines').filter({ hasText: config.fileMarker }).waitFor();
    });

    observations.statusAfterAdd = await step('Add File or Selection to Context changes the status bar', async () => {
        const before = await statusText();
        await runCommand('Ephemeral Context: Add File or Selection to Context');
        return waitForStatusChange(before);
    });

    observations.statusAfterEdit = await step('the status bar changes when the file is edited', async () => {
        const before = await statusText();
        await page.locator('.part.editor .monaco-editor .view-lines').filter({ hasText: config.fileMarker }).click();
        await page.keyboard.press('Control+End');
        await page.keyboard.press('Enter');
        await page.keyboard.type(config.typedText, { delay: 5 });
        return waitForStatusChange(before);
    });

    const rows = page.locator('.pane-body .monaco-list-row');
    const fileRow = rows.filter({ hasText: config.file }).filter({ hasText: 'full' });
    const pinnedRow = fileRow.filter({ hasText: 'pinned' });
    const contextMenu = async (row, action) => {
        await row.first().click({ button: 'right' });
        // Hovering focuses a Monaco menu item; Enter runs it (a synthetic click right after the menu opens is ignored).
        await page.locator('.context-view .monaco-menu').getByRole('menuitem', { name: action, exact: true }).hover();
        await page.keyboard.press('Enter');
    };
    const rowTexts = async () => (await rows.allInnerTexts()).map((text) => normalize(text).replace(/\s+/g, ' ').trim());

    observations.contextBeforeAsk = await step('the status bar opens the Context view, which lists the pinned file', async () => {
        await statusItem().click();
        await pinnedRow.first().waitFor();
        return rowTexts();
    });

    observations.afterUnpin = await step("Unpin from the Context view's context menu", async () => {
        await contextMenu(pinnedRow, 'Unpin');
        await pinnedRow.first().waitFor({ state: 'detached' });
        await fileRow.first().waitFor();
        return rowTexts();
    });

    observations.afterPin = await step("Pin from the Context view's context menu", async () => {
        await contextMenu(fileRow, 'Pin');
        await pinnedRow.first().waitFor();
        return rowTexts();
    });

    observations.afterDrop = await step("Drop from the Context view's context menu", async () => {
        await contextMenu(pinnedRow, 'Drop');
        // Out of the context: the row goes, or stays as an evicted placeholder (still hydratable).
        await fileRow.first().waitFor({ state: 'detached' });
        return rowTexts();
    });


    const chat = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');

    observations.noKeyNotice = await step('Ask Claude without an API key explains how to set one', async () => {
        await runCommand('Ephemeral Context: Ask Claude');
        const notice = chat.locator('#notice');
        await notice.filter({ hasText: 'No Anthropic API key' }).waitFor();
        return (await notice.innerText()).trim();
    });

    await step('set the API key from the panel', async () => {
        await chat.locator('#set-api-key').click();
        const input = page.locator('.quick-input-widget input[type="password"]');
        await input.waitFor({ state: 'visible' });
        await input.fill(config.apiKey);
        await page.keyboard.press('Enter');
        await chat.locator('#notice').waitFor({ state: 'hidden', timeout: TIMEOUT * 2 });
    });

    observations.answer = await step('ask Claude and see the streamed answer', async () => {
        const prompt = chat.locator('#prompt');
        await prompt.waitFor({ state: 'visible' });
        await prompt.fill(config.prompt);
        await prompt.press('Enter');
        await chat.locator('.status.done').waitFor({ timeout: TIMEOUT * 2 });
        return normalize((await chat.locator('.turn .answer').last().innerText()).trim());
    });

    observations.reads = await step('the panel lists what Claude read', async () =>
        chat.locator('.turn').last().locator('.read').allInnerTexts(),
    );
    observations.edits = await step('the panel lists the applied edit', async () =>
        chat.locator('.turn').last().locator('.edit.applied').allInnerTexts(),
    );
    observations.doneStatus = (await chat.locator('.turn .status.done').last().innerText()).trim();

    observations.editorAfterAsk = await step("the model's edit is applied in the open editor", async () => {
        await page.waitForFunction(
            ([marker, expected]) =>
                [...document.querySelectorAll('.part.editor .monaco-editor .view-lines')].some((el) => {
                    const text = el.innerText.replace(/\u00a0/g, ' ');
                    return text.includes(marker) && text.includes(expected);
                }),
            [config.fileMarker, config.expectEdit],
            { timeout: TIMEOUT },
        );
        return editorText(config.fileMarker);
    });

    observations.statusAfterAsk = await statusText();

    observations.contextRows = await step('after the ask the Context view still lists the file', async () => {
        await rows.filter({ hasText: config.file }).first().waitFor();
        return rowTexts();
    });

    observations.tooltip = await step('the status bar tooltip breaks the context down', async () => {
        await page.mouse.move(800, 400);
        await statusItem().hover();
        const hover = page.locator('.monaco-hover, .workbench-hover, .workbench-hover-container, [role="tooltip"]').filter({ hasText: 'files in full' }).first();
        await hover.waitFor();
        const text = normalize(await hover.innerText());
        await page.screenshot({ path: join(config.artifactsDir, 'vscode-status-tooltip.png') });
        await page.mouse.move(800, 400);
        return text;
    });

    await step('save a screenshot', async () => {
        await page.screenshot({ path: join(config.artifactsDir, 'vscode-e2e.png') });
    });

    observations.editorAfterUndo = await step("Undo in the editor reverts the model's edit", async () => {
        const editor = page.locator('.part.editor .monaco-editor .view-lines').filter({ hasText: config.fileMarker });
        await editor.click();
        await page.keyboard.press('Control+Z');
        await page.waitForFunction(
            ([marker, edited]) =>
                [...document.querySelectorAll('.part.editor .monaco-editor .view-lines')].some((el) => {
                    const text = el.innerText.replace(/\u00a0/g, ' ');
                    return text.includes(marker) && !text.includes(edited);
                }),
            [config.fileMarker, config.expectEdit],
        );
        return editorText(config.fileMarker);
    });

    if (config.cancelPrompt) {
        observations.cancel = await step('a slow answer streams in and Cancel stops it', async () => {
            const turns = await chat.locator('.turn').count();
            await chat.locator('#prompt').fill(config.cancelPrompt);
            await chat.locator('#prompt').press('Enter');
            const turn = chat.locator('.turn').nth(turns);
            const answer = turn.locator('.answer');
            // Streaming: part of the answer is on screen while the run is still going.
            await answer.filter({ hasText: /\S/ }).waitFor();
            const partial = normalize(await answer.innerText());
            const stillRunning = await chat.locator('#cancel').isVisible();
            await chat.locator('#cancel').click();
            const status = turn.locator('.status.cancelled');
            await status.waitFor();
            return {
                partial,
                stillRunning,
                final: normalize(await answer.innerText()),
                status: (await status.innerText()).trim(),
                promptEnabled: await chat.locator('#prompt').isEnabled(),
            };
        });
    }

    if (config.replayTranscript) {
        observations.replay = await step('replay a session: pick the transcript, see the report and its chart', async () => {
            await runCommand('Ephemeral Context: Replay a Claude Code Session');
            const input = page.locator('.quick-input-widget input');
            await input.waitFor({ state: 'visible' });
            // The simple file dialog fills in its starting folder and lists it asynchronously, which
            // can overwrite text typed too early: type until the dialog lists the transcript.
            const name = config.replayTranscript.split('/').pop();
            const row = page.locator('.quick-input-list .monaco-list-row').filter({ hasText: name }).first();
            for (let attempt = 1; ; attempt++) {
                await input.fill(config.replayTranscript);
                const listed = await row.waitFor({ timeout: 5000 }).then(() => true, () => false);
                if (listed && (await input.inputValue()) === config.replayTranscript) {
                    break;
                }
                if (attempt === 5) {
                    throw new Error(`the file dialog did not take ${config.replayTranscript}`);
                }
            }
            await page.locator('.quick-input-widget .monaco-button').filter({ hasText: 'Replay' }).first().click();
            const report = await findFrame('svg.chart rect');
            await page.screenshot({ path: join(config.artifactsDir, 'vscode-replay.png') });
            return {
                title: (await report.locator('h1').innerText()).trim(),
                bars: await report.locator('svg.chart rect').count(),
                strategies: await report.locator('table tr td:first-child').allInnerTexts(),
            };
        });
    }
}

const browser = await chromium.launch({
    executablePath: config.chromium ?? '/usr/bin/chromium',
    headless: true,
    args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
    ],
});
try {
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT);

    await step('open the workspace', async () => {
        await page.goto(`${config.url}/?folder=${encodeURIComponent(config.workspace)}`);
        await page.locator('.monaco-workbench .part.statusbar').waitFor({ timeout: TIMEOUT * 2 });
    });

    if (config.failure) {
        await failureFlow();
    } else {
        await userFlow();
    }
    process.stdout.write(`${JSON.stringify(observations)}\n`);
} catch (error) {
    process.stderr.write(`${error.message}\n${JSON.stringify(observations)}\n`);
    process.exitCode = 1;
} finally {
    await browser.close();
}
