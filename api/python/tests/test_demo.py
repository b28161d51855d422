"""The agent demo script runs briefly, exits 0, and reports the invariant held."""

import os
import pathlib
import subprocess
import sys

DEMO = pathlib.Path(__file__).resolve().parent.parent / "examples" / "agent_demo.py"


def test_agent_demo_runs(tmp_path):
    out = subprocess.run([sys.executable, str(DEMO), "--db", str(tmp_path / "demo"), "--agents", "4",
                          "--seconds", "1", "--seed", "3"],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "invariant            HOLDS" in out.stdout
    committed = int(out.stdout.split("committed writes")[1].split()[0])
    assert committed > 0


def test_agent_demo_refuses_bad_arguments(tmp_path):
    out = subprocess.run([sys.executable, str(DEMO), "--agents", "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--agents" in out.stderr
