"""An error's lines become one `error:` line: a line ending in ":" introduces the next, the
others are separated by "; " (a refusal that lists its options reads "options: a, b; seed: ...")."""

from unienv.errors import ArgumentError
from unienv.tools.cli import message


def test_a_heading_line_joins_its_list_without_a_semicolon():
    e = ArgumentError("train.resume: the checkpoint differs in\noptions:\nnum_envs 4 != 8\nseed:\n0 != 1")
    assert message(e) == "train.resume: the checkpoint differs in; options: num_envs 4 != 8; seed: 0 != 1"


def test_plain_lines_are_joined_by_semicolons_and_other_errors_keep_their_first_line():
    assert message(ArgumentError("first\n\n second ")) == "first; second"
    assert message(RuntimeError("only this\nnot this")) == "only this"
