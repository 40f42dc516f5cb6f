"""`privdb --help` as a newcomer reads it: every command in a panel, choices shown as choices, lines not cut
at 80 columns when piped, and nothing that points outside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from privdb.cli import app
from privdb.cli.core import PANELS


def _help(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH", "LINES")}
    ran = subprocess.run(
        [sys.executable, "-m", "privdb", *args, "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def _commands() -> list[str]:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    return [n.replace("_", "-") for n in names] + [str(g.name) for g in app.registered_groups]


def test_every_command_sits_in_a_panel() -> None:
    listed = {name for names in PANELS.values() for name in names}
    assert set(_commands()) <= listed, set(_commands()) - listed
    top = _help()
    for panel in PANELS:
        if any(name in _commands() for name in PANELS[panel]):
            assert panel in top


def test_piped_help_is_not_squeezed_into_80_columns() -> None:
    text = _help("explain")
    assert max(len(line) for line in text.splitlines()) > 80
    # a docstring's wrapped lines read as one paragraph (no line break in mid-sentence)
    assert "without reading data or spending budget (as the" in " ".join(text.split())


@pytest.mark.parametrize(
    ("command", "choice"),
    [(["query"], "<table|json|csv>"), (["budget"], "<table|json>"), (["anonymize"], "<mondrian|lattice>")],
)
def test_choices_are_shown_as_choices(command: list[str], choice: str) -> None:
    assert choice in _help(*command)


def test_a_wrong_choice_is_refused_naming_the_allowed_ones() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "privdb", "budget", "--db", "x", "--format", "xml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 2
    assert ran.stderr.count("\n") == 1, ran.stderr  # one line, as every user error
    assert ran.stderr.startswith(
        "error [invalid_parameter]: Invalid value for '--format': 'xml' is not one of"
    )
    assert "(see `privdb budget --help`)" in ran.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["query", "--bogus"], "No such option: --bogus (see `privdb query --help`)"),
        (["nosuch"], "No such command 'nosuch'. (see `privdb --help`)"),
        (["survey", "create", "s", "--protocol", "rappor"], "'rappor' is not one of"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], said: str) -> None:
    ran = subprocess.run([sys.executable, "-m", "privdb", *args], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1 and said in ran.stderr, ran.stderr


def test_privdb_alone_shows_the_help() -> None:
    ran = subprocess.run([sys.executable, "-m", "privdb"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2 and "Usage: privdb" in ran.stdout + ran.stderr


def test_help_points_at_nothing_outside_the_repository() -> None:
    for command in ["", *_commands()]:
        text = _help(*([command] if command else []))
        assert not re.search(r"DESIGN\.md|\.\./shared|https?://(?!127\.0\.0\.1|localhost)", text), command


def test_no_help_text_is_eaten_by_markdown() -> None:
    """The help is rendered as Markdown: an `<word>` would vanish as an HTML tag."""
    import typer.main

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            assert not re.search(r"<[A-Za-z][\w-]*>", text), (name, text)
