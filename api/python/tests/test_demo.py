"""The Python agent demo runs and finds every increment in place."""

import pathlib
import runpy
import sys


def test_agent_demo_runs(tmp_path, capsys):
    demo = pathlib.Path(__file__).resolve().parent.parent / "examples" / "agent_demo.py"
    mod = runpy.run_path(str(demo))
    rc = mod["main"](["--db", str(tmp_path / "demo"), "--agents", "3", "--seconds", "1", "--think-ms", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "LOST UPDATE" not in out
    assert out.count(" ok") == 3
