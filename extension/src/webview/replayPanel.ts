/**
 * Shows a replay report with its chart in a webview panel. The page is static (no script at
 * all); the HTML comes from the pure renderer in model/replayReport.ts.
 */
import * as path from 'node:path';
import { Uri, ViewColumn, window } from 'vscode';
import { parseReplayReport, renderReplayHtml } from '../model/replayReport';
import { escapeHtml, renderPage } from './html';

export const REPLAY_VIEW_TYPE = 'ephemeralContext.replay';

export function showReplayReport(extensionUri: Uri, transcript: string, report: unknown): void {
    const panel = window.createWebviewPanel(REPLAY_VIEW_TYPE, `Replay: ${path.basename(transcript)}`, ViewColumn.Active, {
        enableScripts: false,
        localResourceRoots: [Uri.joinPath(extensionUri, 'media')],
    });
    const parsed = parseReplayReport(report);
    panel.webview.html = renderPage(panel.webview, {
        title: 'Replay',
        styles: [Uri.joinPath(extensionUri, 'media', 'replay.css')],
        body: typeof parsed === 'string' ? `<p class="error">${escapeHtml(parsed)}</p>` : renderReplayHtml(parsed),
    });
}
