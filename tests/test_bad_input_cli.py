"""The CLI's top-level handler: no traceback reaches a user; ``--debug`` shows it."""

from __future__ import annotations

import pytest

from perfmodel import cli
from perfmodel.errors import ConfigError


def _parser_raising(exc: BaseException):
    """A build_parser whose 'hardware list' raises ``exc``."""
    real = cli.build_parser

    def build():
        parser = real()

        def boom(_args):
            raise exc
        parser._subparsers._group_actions[0].choices["hardware"]._subparsers._group_actions[0] \
            .choices["list"].set_defaults(func=boom)
        return parser
    return build


@pytest.mark.parametrize("exc, code, needles", [
    (RuntimeError("boom\nsecond line"), 3, ("internal error: RuntimeError: boom", "report", "--debug")),
    (ZeroDivisionError("division by zero"), 3, ("internal error: ZeroDivisionError",)),
    (ConfigError("tp: must be >= 1, got 0"), 2, ("perfmodel hardware: error: tp: must be >= 1, got 0",)),
    (NotADirectoryError(20, "Not a directory", "/x/y"), 2, ("error: /x/y: Not a directory",)),
])
def test_unexpected_errors_are_one_line(monkeypatch, capsys, exc, code, needles):
    monkeypatch.setattr(cli, "build_parser", _parser_raising(exc))
    assert cli.main(["hardware", "list"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    for needle in needles:
        assert needle in err


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setattr(cli, "build_parser", _parser_raising(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["--debug", "hardware", "list"])


def test_perfmodel_errors_stay_clean_under_debug(monkeypatch, capsys):
    monkeypatch.setattr(cli, "build_parser", _parser_raising(ConfigError("batch: must be >= 1, got 0")))
    assert cli.main(["--debug", "hardware", "list"]) == 2
    assert capsys.readouterr().err == "perfmodel hardware: error: batch: must be >= 1, got 0\n"
