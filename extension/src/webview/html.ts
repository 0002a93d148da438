/**
 * The shell every panel's HTML shares: a strict Content-Security-Policy (no inline script,
 * scripts only with a fresh crypto nonce, resources only from the extension's own folders).
 */
import { randomBytes } from 'node:crypto';
import { Uri, Webview } from 'vscode';

/** A new nonce for every render (never Math.random). */
export function makeNonce(): string {
    return randomBytes(18).toString('base64');
}

export interface PageParts {
    title: string;
    styles: Uri[];
    script?: Uri;
    body: string;
}

export function renderPage(webview: Webview, parts: PageParts): string {
    const nonce = makeNonce();
    const csp = [
        "default-src 'none'",
        `style-src ${webview.cspSource}`,
        `img-src ${webview.cspSource} data:`,
        `font-src ${webview.cspSource}`,
        `script-src 'nonce-${nonce}'`,
    ].join('; ');
    const styles = parts.styles.map((uri) => `<link rel="stylesheet" href="${webview.asWebviewUri(uri)}">`).join('\n');
    const script = parts.script ? `<script nonce="${nonce}" src="${webview.asWebviewUri(parts.script)}"></script>` : '';
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${styles}
<title>${escapeHtml(parts.title)}</title>
</head>
<body>
${parts.body}
${script}
</body>
</html>`;
}

export function escapeHtml(text: string): string {
    return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}
