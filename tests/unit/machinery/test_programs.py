"""Which container commands phalanx recognises, and what they do."""

from __future__ import annotations

import pytest

from phalanx.machinery.programs import Program, recognize


@pytest.mark.parametrize("command, args, program", [
    (["sleep", "2"], None, Program(2.0)),
    (["/bin/sleep"], ["1m"], Program(60.0)),
    (["sleep", "infinity"], None, Program(None)),
    (["true"], None, Program()),
    (["false"], None, Program(exit_code=1)),
    (["sh", "-c", "exit 3"], None, Program(exit_code=3)),
    (["echo", "hello", "world"], None, Program(output=["hello world"])),
    (["/bin/sh", "-c", "echo a; sleep 5 && false || echo b\nexit 2; echo never"], None,
     Program(5.0, 2, ["a", "b"])),
    (["sh", "-c", "exec sleep 10"], None, Program(10.0)),
])
def test_recognised(command, args, program):
    assert recognize(command, args) == program


@pytest.mark.parametrize("command, args", [
    (None, None), (["perl", "-e", "1"], None), (["sh", "-c", "echo a | grep a"], None),
    (["sleep", "soon"], None), (["python", "train.py"], None), (["sh", "-c", "sleep 1 &"], None),
])
def test_everything_else_is_unknown(command, args):
    assert recognize(command, args) is None
