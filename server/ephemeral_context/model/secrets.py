"""What the model may see and touch: the workspace boundary and the secret filter.

Every tool that reads or changes a file asks this module first. A path is resolved (symlinks
included) and must land inside one of the workspace folders; a file whose name matches a
secret pattern, or whose text holds a private-key block or a well-known token format, is
withheld unless the user opted in for that very file. The reasons are written for the model
to read, and they never quote the secret itself.

API:
- `Workspace`: the folders the model may use; resolves a path or raises `AccessDenied`.
- `SecretPolicy`: whether a file may be sent.
- `find_secret(text)`: the first well-known secret in a text.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath

from ephemeral_context.documents import UnmirroredReason, shown_name
from ephemeral_context.echo import quoted

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.ppk",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials",
    "credentials.*",
    "*credentials*.json",
    ".netrc",
    ".pgpass",
    ".pypirc",
    ".npmrc",
    ".git-credentials",
    "secrets.*",
    ".htpasswd",
    ".vault-token",
    "*.tfstate",
    "*.tfstate.backup",
    ".docker/config.json",
    ".kube/config",
)
"""File-name globs (matched against the base name, case-insensitively; one with a `/`
against the path) that are never sent."""

# Each entry: what it is (for the reason the model reads), the text that any match holds
# (a search for it rules the pattern out at a fraction of the regular expression's cost:
# these run over every tool result a replay or the gateway takes in), and how it looks.
CONTENT_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "a private-key block",
        ("PRIVATE KEY",),
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
    (
        "an AWS access key id",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    ),
    (
        "a GitHub token",
        ("gh", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ),
    (
        "an AWS secret access key",  # named as the SDKs, the CLI's JSON and env vars name it
        ("secret_access_key", "SECRET_ACCESS_KEY", "SecretAccessKey"),
        re.compile(
            r"(?i)secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
        ),
    ),
    ("a Slack token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an Anthropic API key", ("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("an OpenAI API key", ("sk-",), re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{40,}")),
    ("a Google API key", ("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a Stripe live key", ("_live_",), re.compile(r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,}")),
    ("an npm token", ("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("a GitLab token", ("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Hugging Face token", ("hf_",), re.compile(r"\bhf_[A-Za-z0-9]{34,}\b")),
    ("a PyPI token", ("pypi-",), re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    (
        "a SendGrid key",
        ("SG.",),
        re.compile(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
    ),
    ("an age secret key", ("AGE-SECRET-KEY-1",), re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b")),
    ("a PuTTY private key", ("PuTTY-User-Key-File-",), re.compile(r"PuTTY-User-Key-File-\d+:")),
)


PATH_MAX = 4096
"""Linux's bound on a path: a longer one names no file (and is not echoed whole)."""


def _is_glob(pattern: str) -> bool:
    return any(char in pattern for char in "*?[")


class AccessDenied(Exception):
    """A path the model asked for is outside the workspace or unusable; the message says why.

    `reason` names the check that refused: "outsideWorkspace", "secret", or the mirror's
    reason for a file it does not hold as text ("binary", "too-large", ...)."""

    def __init__(self, message: str, reason: str = "outsideWorkspace") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SecretFinding:
    """Why a text was withheld: what kind of secret, and on which line (1-based)."""

    kind: str
    line: int


def find_secret(text: str) -> SecretFinding | None:
    """The first well-known secret in `text`, or None; the secret itself is not kept."""
    best: SecretFinding | None = None
    for kind, needles, pattern in CONTENT_PATTERNS:
        if not any(needle in text for needle in needles):
            continue
        match = pattern.search(text)
        if match is None:
            continue
        line = text.count("\n", 0, match.start()) + 1
        if best is None or line < best.line:
            best = SecretFinding(kind, line)
    return best


@dataclass
class Workspace:
    """The folders the model may read and edit in, resolved once (symlinks included)."""

    roots: tuple[Path, ...]

    @classmethod
    def of(cls, folders: Iterable[str | Path]) -> Workspace:
        roots = tuple(Path(folder).expanduser().resolve() for folder in folders)
        if not roots:
            raise ValueError("a workspace needs at least one folder")
        return cls(roots)

    def resolve(self, path: str) -> Path:
        """The real path for what the model wrote, or AccessDenied if it leaves the workspace.

        Relative paths are taken as the tools show them (`_anchored`). Resolution follows
        symlinks, so a link inside the workspace that points outside is refused like `../..`.
        """
        if not path or "\x00" in path:
            raise AccessDenied("the path is empty or contains a NUL byte")
        unreadable = UnmirroredReason.UNREADABLE.value  # not outside: unreadable
        if len(path) > PATH_MAX:
            message = f"{quoted(path)} is longer than any path ({PATH_MAX:,} characters)"
            raise AccessDenied(message, unreadable)
        candidate = Path(path)
        if path == "~" or path.startswith("~/"):  # `~$doc.txt`, `~notes/`: names, not homes
            candidate = candidate.expanduser()
        if not candidate.is_absolute():
            candidate = self._anchored(candidate)
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops, permission problems
            raise AccessDenied(f"{quoted(path)}: cannot be resolved ({exc})", unreadable) from exc
        if not any(real == root or real.is_relative_to(root) for root in self.roots):
            folders = ", ".join(map(str, self.roots))
            raise AccessDenied(
                f"{quoted(path)} is outside the workspace folders ({folders}); "
                "only files inside them can be read or edited"
            )
        return real

    def _anchored(self, relative: Path) -> Path:
        """A relative path read as `relative` writes them: with several folders, under the
        folder its first part names (`beta/lib/x.py`); else under the first folder."""
        head, *rest = relative.parts or (".",)
        if len(self.roots) > 1:
            for root in self.roots:
                if head == root.name:
                    return root.joinpath(*rest)
        return self.roots[0] / relative

    def relative(self, real: Path) -> str:
        """The short name the model sees: relative to the folder that holds it (a byte that
        is not UTF-8 escaped: `shown_name`)."""
        for root in self.roots:
            if real == root or real.is_relative_to(root):
                rel = real.relative_to(root).as_posix()
                return shown_name(rel if len(self.roots) == 1 else f"{root.name}/{rel}")
        return shown_name(real.as_posix())


@dataclass
class SecretPolicy:
    """Decides whether a file may be sent; per-file opt-ins override every rule."""

    patterns: Sequence[str] = DEFAULT_SECRET_PATTERNS
    allowed: set[Path] = field(default_factory=set)
    allowed_globs: Sequence[str] = ()

    @classmethod
    def configured(
        cls, extra_patterns: Sequence[str], allow: Sequence[str], base: Path | None = None
    ) -> SecretPolicy:
        """The built-in patterns plus the user's, and the user's opt-ins: paths (relative
        ones taken from `base`, the first workspace folder) or globs (matched from the end
        of the path, so `config/*.env` works in any folder)."""
        paths: set[Path] = set()
        for entry in allow:
            if _is_glob(entry):
                continue
            path = Path(entry).expanduser()
            if not path.is_absolute() and base is not None:
                path = base / path
            paths.add(path.resolve())
        globs = tuple(entry for entry in allow if _is_glob(entry))
        return cls((*DEFAULT_SECRET_PATTERNS, *extra_patterns), paths, globs)

    def allow(self, real: Path) -> None:
        """The user's opt-in for one file (by its resolved path)."""
        self.allowed.add(real.resolve())

    def opted_in(self, real: PurePath) -> bool:
        """Whether the user allowed this file by path or by glob."""
        if real in self.allowed:
            return True
        posix = PurePosixPath(real.as_posix())
        return any(posix.match(glob) for glob in self.allowed_globs)

    def path_reason(self, real: PurePath) -> str | None:
        """Why this path is withheld by name alone (pattern or .git internals), or None. A
        pattern with a `/` is matched against the path and every folder it lies in, so
        `secrets/*` (or `secrets/`) withholds `secrets/prod/db.yaml` too."""
        if self.opted_in(real):
            return None
        if ".git" in (part.lower() for part in real.parts):  # `.GIT/config` on macOS too
            return f"{shown_name(real.name)} is inside .git/ (repository internals are never sent)"
        name = real.name.lower()
        posix = PurePosixPath(real.as_posix().lower())
        for pattern in self.patterns:
            lowered = pattern.lower()
            if fnmatch.fnmatchcase(name, lowered) or (
                "/" in pattern and any(p.match(lowered) for p in (posix, *posix.parents))
            ):
                return f"{shown_name(real.name)} matches the secret pattern {pattern!r}"
        return None

    def content_reason(self, real: Path, text: str) -> str | None:
        """Why this text is withheld (a private key or token inside), or None."""
        if self.opted_in(real):
            return None
        finding = find_secret(text)
        if finding is None:
            return None
        shown = shown_name(real.name)
        return f"{shown} contains what looks like {finding.kind} (line {finding.line})"

    @staticmethod
    def withheld_message(display: str, reason: str) -> str:
        """The tool result the model reads instead of the file."""
        return (
            f"[withheld: {display}] {reason}. Its content was not sent. If the user wants it "
            "shared, they can allow this one file (setting `allowSecretFiles`, or "
            "`ectx ask --allow-secret PATH`)."
        )
