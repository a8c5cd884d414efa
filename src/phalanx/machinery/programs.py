"""What a container's command would do, for the few programs whose behaviour is plain from argv.

Simulated nodes run no processes, but `sleep 2`, `true`, `false`, `exit 3`, `echo hi` and
`sh -c "echo hi; sleep 5; exit 1"` say what they will do: how long they run, the exit code and
what they print. `recognize(command, args)` returns that as a `Program`, or None when the argv is
anything else (a server, a training script, an image's own entrypoint): such containers run until
something ends them.

Recognised, after `exec` and a leading directory are dropped (`/bin/sleep` is `sleep`):

    sleep N[s|m|h|d] | sleep infinity    runs N (or forever), exits 0
    true | : | false | exit [N]          ends at once with 0, 0, 1, N
    echo [-n|-e] WORDS                   prints WORDS, exits 0
    sh|bash|ash|dash -c "SCRIPT"         SCRIPT: those commands joined by `;`, `&&`, `||` or
                                         newlines, run in order with the shell's short-circuits
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Callable

SHELLS = ("sh", "bash", "ash", "dash", "zsh")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class Program:
    """What a recognised program does: runs `duration` seconds (None: forever), then exits with
    `exit_code` after printing `output` (one entry a line)."""

    duration: float | None = 0.0
    exit_code: int = 0
    output: list[str] = field(default_factory=list)


def recognize(command: list[str] | None, args: list[str] | None) -> Program | None:
    argv = [str(a) for a in (command or [])] + [str(a) for a in (args or [])]
    if not argv:
        return None
    return _simple(argv)


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _sleep_seconds(word: str) -> float | None:
    if word == "infinity":
        return float("inf")
    unit = _UNITS.get(word[-1:], None)
    number = word[:-1] if unit else word
    try:
        value = float(number)
    except ValueError:
        return None
    return value * (unit or 1) if value >= 0 else None


def _sleep(rest: list[str]) -> Program | None:
    total = 0.0
    for w in rest:
        s = _sleep_seconds(w)
        if s is None:
            return None
        total += s
    return Program(duration=None if total == float("inf") else total) if rest else None


def _exit(rest: list[str]) -> Program | None:
    if len(rest) > 1:
        return None
    try:
        return Program(exit_code=(int(rest[0]) % 256) if rest else 0)
    except ValueError:
        return None


def _echo(rest: list[str]) -> Program:
    while rest and rest[0] in ("-n", "-e", "-ne", "-en"):
        rest = rest[1:]
    return Program(output=[" ".join(rest)])


def _shell(rest: list[str]) -> Program | None:
    return _script(rest[1]) if len(rest) >= 2 and rest[0] == "-c" else None


_PROGRAMS: dict[str, Callable[[list[str]], Program | None]] = {
    "sleep": _sleep, "exit": _exit, "echo": _echo,
    "true": lambda rest: None if rest else Program(), ":": lambda rest: None if rest else Program(),
    "false": lambda rest: None if rest else Program(exit_code=1),
    **{shell: _shell for shell in SHELLS},
}


def _simple(argv: list[str]) -> Program | None:
    while argv and _name(argv[0]) == "exec":
        argv = argv[1:]
    if not argv:
        return Program()
    run = _PROGRAMS.get(_name(argv[0]))
    return run(argv[1:]) if run is not None else None


def _script(text: str) -> Program | None:
    """A shell script of recognised commands and `;`, `&&`, `||`, newlines."""
    try:
        lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    steps: list[tuple[str, list[str]]] = []
    joiner = ";"
    current: list[str] = []
    for tok in tokens:
        if tok in (";", "&&", "||"):
            steps.append((joiner, current))
            joiner, current = tok, []
        elif set(tok) <= set(";&|"):
            return None  # pipes and background jobs are not followed
        else:
            current.append(tok)
    steps.append((joiner, current))
    return _run(steps)


def _run(steps: list[tuple[str, list[str]]]) -> Program | None:
    total, status, output = 0.0, 0, []
    for joiner, argv in steps:
        if not argv:
            continue
        if (joiner == "&&" and status != 0) or (joiner == "||" and status == 0):
            continue
        p = _simple(argv)
        if p is None:
            return None
        output += p.output
        if p.duration is None:
            return Program(duration=None, exit_code=0, output=output)
        total += p.duration
        status = p.exit_code
        if _name(argv[0]) == "exit" or (argv[0] == "exec"):
            break
    return Program(duration=total, exit_code=status, output=output)
