"""Starts and stops `gatedb serve` for a Python test.

The binary is the one given to set_bin() (pymongo_test.py's --bin), else
$GATEDB_BIN, else <repo>/build/api/gatedb. Each server gets a fresh
temporary data directory (or the one given) and `--port 0`; start() returns
once the server has printed its ready line `listening on 127.0.0.1:PORT`
(30 s at most, else it raises with the server's stderr). stop() sends
SIGTERM (or the signal given) and raises AssertionError unless the server
exits with status 0 within 20 s and printed exactly that one stdout line.

GATEDB_TEST_VERBOSE=1 runs the server without --quiet.
"""

import ctypes
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0
READY_LINE = re.compile(r"^listening on 127\.0\.0\.1:(\d+)$")

_bin_override = None


def _die_with_parent():
    # Runs in the child before exec: SIGKILL the server if this test process
    # dies first (a watchdog exit, a crash), so no server outlives its test.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def set_bin(path):
    global _bin_override
    _bin_override = os.path.abspath(path)


def gatedb_bin():
    if _bin_override:
        return _bin_override
    env = os.environ.get("GATEDB_BIN")
    if env:
        return os.path.abspath(env)
    return os.path.join(REPO_ROOT, "build", "api", "gatedb")


class GatedbServer:
    def __init__(self, extra_args=(), data_dir=None):
        self.extra_args = list(extra_args)
        self.owns_dir = data_dir is None
        self.dir = data_dir
        self.port = 0
        self.proc = None
        self.stdout_lines = []
        self._lines = queue.Queue()
        self._stderr_file = None

    def start(self):
        binary = gatedb_bin()
        if not os.path.exists(binary):
            raise RuntimeError("gatedb binary not found at %s (build it, or set GATEDB_BIN / --bin)" % binary)
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="gatedb-client-test-")
        self._stderr_file = tempfile.TemporaryFile(prefix="gatedb-serve-stderr-")
        args = [binary, "serve", "--db", self.dir, "--port", "0"]
        if not os.environ.get("GATEDB_TEST_VERBOSE"):
            args.append("--quiet")
        args += self.extra_args
        self.args = args
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr_file, preexec_fn=_die_with_parent)
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        try:
            line = self._lines.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            self._fail_start("printed no ready line within %.0f s" % READY_TIMEOUT_S)
        if line is EOFError:
            self._fail_start("closed stdout (status %s) before its ready line" % self.proc.poll())
        m = READY_LINE.match(line)
        if not m:
            self._fail_start("printed %r instead of the ready line" % line)
        self.port = int(m.group(1))
        return self

    def _read_stdout(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stdout_lines.append(line)
            self._lines.put(line)
        self._lines.put(EOFError)

    def _fail_start(self, why):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        message = ("gatedb serve %s\ncommand: %s\n--- server stderr ---\n%s"
                   % (why, " ".join(self.args), self.stderr()))
        self._close_files()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError(message)

    def stderr(self, limit=256 * 1024):
        if self._stderr_file is None:
            return ""
        self._stderr_file.flush()
        self._stderr_file.seek(0, os.SEEK_END)
        size = self._stderr_file.tell()
        self._stderr_file.seek(max(0, size - limit))
        return self._stderr_file.read().decode("utf-8", "replace")

    def uri(self, form="replicaSet", db="", extra=""):
        q = "directConnection=true" if form == "direct" else "replicaSet=gatedb"
        return "mongodb://127.0.0.1:%d/%s?%s%s" % (self.port, db, q, ("&" + extra) if extra else "")

    def kill(self):
        """Ends the server at once, if it still runs (cleanup after a failed test)."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, keep_dir=False):
        if self.proc.poll() is not None:
            raise AssertionError("gatedb serve had already exited (status %s) before the test stopped it\n"
                                 "--- server stderr ---\n%s" % (self.proc.returncode, self.stderr()))
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("gatedb serve did not exit within %.0f s of %s\n--- server stderr ---\n%s"
                                 % (STOP_TIMEOUT_S, signal.Signals(sig).name, self.stderr()))
        self._reader.join(timeout=5)  # the rest of stdout
        if code != 0:
            raise AssertionError("gatedb serve exited with status %s after %s, expected 0 (data dir kept: %s)\n"
                                 "--- server stderr ---\n%s"
                                 % (code, signal.Signals(sig).name, self.dir, self.stderr()))
        if len(self.stdout_lines) != 1:
            raise AssertionError("gatedb serve printed %d stdout lines, expected exactly the ready line: %r"
                                 % (len(self.stdout_lines), self.stdout_lines))
        self._close_files()
        if self.owns_dir and not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _close_files(self):
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None
