"""The workspace boundary and the secret filter, on real files and real symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ephemeral_context.model.secrets import (
    AccessDenied,
    SecretPolicy,
    Workspace,
    find_secret,
)

# Built by concatenation so this test file itself does not look like it holds secrets.
PRIVATE_KEY = (
    "-----BEGIN "
    + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n"
)
TOKENS = {
    "an AWS access key id": "AKIA" + "IOSFODNN7EXAMPLE",
    "a GitHub token": "ghp_" + "a" * 36,
    "a Slack token": "xoxb-" + "1234567890-abcdefghij",
    "an Anthropic API key": "sk-ant-" + "api03-" + "x" * 40,
    "a Google API key": "AIza" + "B" * 35,
    "a Stripe live key": "sk_live_" + "c" * 24,
    "an OpenAI API key": "sk-proj-" + "d" * 40,
    "an npm token": "npm_" + "e" * 36,
    "a GitLab token": "glpat-" + "f" * 20,
    "a GitHub token (fine-grained)": "github_pat_" + "g" * 40,
    "an AWS access key id (temporary)": "ASIA" + "IOSFODNN7EXAMPLE",
    "an AWS secret access key": "aws_secret_access_key="
    + "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"
    + "E" * 10,
    "an AWS secret access key (the CLI's JSON)": 'SecretAccessKey": "' + "Kx9/" * 10,
    "a Hugging Face token": "hf_" + "h" * 34,
    "a PyPI token": "pypi-" + "AgEIcHlwaS5vcmc" + "i" * 60,
    "a SendGrid key": "SG." + "j" * 22 + "." + "k" * 43,
    "an age secret key": "AGE-SECRET-KEY-1" + "Q" * 58,
    "a PuTTY private key": "PuTTY-User-" + "Key-File-3: ssh-ed25519",
}
"""One of each form CONTENT_PATTERNS knows (each must hold one of its pattern's needles)."""


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    return Workspace.of([root])


def test_relative_and_absolute_paths_inside_resolve(workspace: Workspace) -> None:
    root = workspace.roots[0]
    assert workspace.resolve("src/app.py") == root / "src" / "app.py"
    assert workspace.resolve(str(root / "src" / "app.py")) == root / "src" / "app.py"
    assert workspace.resolve("src/../src/app.py") == root / "src" / "app.py"
    assert workspace.relative(root / "src" / "app.py") == "src/app.py"


def test_dotdot_escape_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("not yours\n")
    with pytest.raises(AccessDenied, match="outside the workspace"):
        workspace.resolve("../outside.txt")
    with pytest.raises(AccessDenied, match="outside the workspace"):
        workspace.resolve(str(tmp_path / "outside.txt"))
    with pytest.raises(AccessDenied, match="outside the workspace"):
        workspace.resolve("/etc/passwd")


def test_symlink_pointing_outside_is_refused(workspace: Workspace, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("not yours\n")
    os.symlink(tmp_path / "outside.txt", workspace.roots[0] / "link.txt")
    os.symlink(tmp_path, workspace.roots[0] / "linkdir")
    with pytest.raises(AccessDenied, match="outside the workspace"):
        workspace.resolve("link.txt")
    with pytest.raises(AccessDenied, match="outside the workspace"):
        workspace.resolve("linkdir/outside.txt")


def test_symlink_inside_the_workspace_is_fine(workspace: Workspace) -> None:
    root = workspace.roots[0]
    os.symlink(root / "src" / "app.py", root / "alias.py")
    assert workspace.resolve("alias.py") == root / "src" / "app.py"


def test_symlink_loop_and_nul_are_clear_errors(workspace: Workspace) -> None:
    root = workspace.roots[0]
    os.symlink(root / "b", root / "a")
    os.symlink(root / "a", root / "b")
    with pytest.raises(AccessDenied):
        workspace.resolve("a")
    with pytest.raises(AccessDenied, match="NUL"):
        workspace.resolve("src/\x00app.py")
    with pytest.raises(AccessDenied, match="empty"):
        workspace.resolve("")


def test_second_workspace_folder_is_allowed(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (two / "x.py").write_text("x = 1\n")
    ws = Workspace.of([one, two])
    assert ws.resolve(str(two / "x.py")) == two / "x.py"
    assert ws.relative(two / "x.py") == "two/x.py"


def test_an_empty_workspace_is_rejected() -> None:
    with pytest.raises(ValueError, match="at least one folder"):
        Workspace.of([])


@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "prod.env",
        "server.pem",
        "tls.key",
        "id_rsa",
        "id_ed25519.pub",
        "credentials",
        "credentials.json",
        "gcp-credentials-prod.json",
        ".netrc",
        ".npmrc",
        "Server.PEM",
        ".htpasswd",
        ".vault-token",
        "deploy.ppk",
        "terraform.tfstate",
        "terraform.tfstate.backup",
        ".docker/config.json",
        ".kube/config",
    ],
)
def test_secret_file_names_are_withheld(tmp_path: Path, name: str) -> None:
    assert SecretPolicy().path_reason(tmp_path / name) is not None


@pytest.mark.parametrize(
    "name", ["app.py", "environment.py", "keys.py", "README.md", "monkey.txt", "kube/config"]
)
def test_ordinary_names_pass(tmp_path: Path, name: str) -> None:
    assert SecretPolicy().path_reason(tmp_path / name) is None


def test_git_internals_are_withheld(tmp_path: Path) -> None:
    reason = SecretPolicy().path_reason(tmp_path / ".git" / "config")
    assert reason is not None and ".git/" in reason
    assert SecretPolicy().path_reason(tmp_path / ".gitignore") is None
    # a file system that ignores case (macOS, Windows) opens .git/config by this name too
    assert SecretPolicy().path_reason(tmp_path / ".GIT" / "config") is not None


def test_private_key_block_is_found_with_its_line() -> None:
    finding = find_secret("line one\nline two\n" + PRIVATE_KEY)
    assert finding is not None
    assert finding.kind == "a private-key block"
    assert finding.line == 3


@pytest.mark.parametrize(("kind", "token"), sorted(TOKENS.items()))
def test_well_known_tokens_are_found(kind: str, token: str) -> None:
    finding = find_secret(f"config = {{\n  'token': '{token}',\n}}\n")
    assert finding is not None
    assert finding.kind == kind.split(" (")[0]
    assert finding.line == 2


def test_ordinary_code_has_no_findings() -> None:
    text = (
        "def ask(key: str) -> str:\n    return 'sk-' + key  # AKIA is a prefix\n"
        "aws_secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']\n"
        "path = hf_hub_download(repo_id, 'model.safetensors')  # SG.name, pypi-mirror\n"
    )
    assert find_secret(text) is None


def test_reason_never_quotes_the_secret(tmp_path: Path) -> None:
    token = TOKENS["a GitHub token"]
    reason = SecretPolicy().content_reason(tmp_path / "settings.py", f"TOKEN = '{token}'\n")
    assert reason is not None
    assert token not in reason
    message = SecretPolicy.withheld_message("settings.py", reason)
    assert token not in message
    assert "a GitHub token" in message and "allow" in message


def test_opt_in_is_per_file(tmp_path: Path) -> None:
    policy = SecretPolicy()
    env, other = tmp_path / ".env", tmp_path / ".env.prod"
    env.write_text("A=1\n")
    policy.allow(env)
    assert policy.path_reason(env) is None
    assert policy.content_reason(env, PRIVATE_KEY) is None
    assert policy.path_reason(other) is not None
    assert policy.content_reason(tmp_path / "x.py", PRIVATE_KEY) is not None


def test_extra_patterns_from_configuration(tmp_path: Path) -> None:
    policy = SecretPolicy(patterns=("*.secret", "vault/*.yaml"))
    assert policy.path_reason(tmp_path / "db.secret") is not None
    assert policy.path_reason(tmp_path / "vault" / "prod.yaml") is not None
    assert policy.path_reason(tmp_path / "prod.yaml") is None
    assert policy.path_reason(tmp_path / "Vault" / "prod.YAML") is not None  # as names are


@pytest.mark.parametrize("pattern", ["secrets/*", "secrets/**", "secrets/", "ws/secrets"])
def test_a_folder_pattern_withholds_what_lies_deeper_in_it(tmp_path: Path, pattern: str) -> None:
    policy = SecretPolicy(patterns=(pattern,))
    assert policy.path_reason(tmp_path / "ws" / "secrets" / "prod" / "db.yaml") is not None
    assert policy.path_reason(tmp_path / "ws" / "secrets" / "db.yaml") is not None
    assert policy.path_reason(tmp_path / "ws" / "public" / "secrets.md") is None


def test_configured_opt_ins_by_relative_path_and_glob(tmp_path: Path) -> None:
    policy = SecretPolicy.configured(["*.vault"], ["deploy/.env", "config/*.pem"], base=tmp_path)
    assert policy.path_reason(tmp_path / "deploy" / ".env") is None
    assert policy.path_reason(tmp_path / ".env") is not None
    assert policy.path_reason(tmp_path / "a" / "config" / "tls.pem") is None
    assert policy.path_reason(tmp_path / "tls.pem") is not None
    assert policy.path_reason(tmp_path / "x.vault") is not None
    assert policy.content_reason(tmp_path / "a" / "config" / "tls.pem", PRIVATE_KEY) is None
