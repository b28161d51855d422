// Starts and stops `gatedb serve` for one test file.
//
// The binary is $GATEDB_BIN, else <repo>/build/api/gatedb. Each server gets
// a fresh temporary data directory and `--port 0`; startServer() resolves
// once the server has printed its one ready line
// `listening on 127.0.0.1:PORT` (30 s at most, else it fails with the
// server's stderr). stop() sends SIGTERM (or the signal given) and fails
// unless the server exits with status 0 within 20 s, and unless its stdout
// held exactly that one line.
//
// Set GATEDB_TEST_VERBOSE=1 to run the server without --quiet and to copy
// its stderr to this process's stderr as it comes.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(HERE, '..', '..', '..');

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 20_000;
const STDERR_KEEP = 256 * 1024;
const READY_LINE = /^listening on 127\.0\.0\.1:(\d+)$/;

export function gatedbBin() {
  const fromEnv = process.env.GATEDB_BIN;
  return fromEnv ? path.resolve(fromEnv) : path.join(REPO_ROOT, 'build', 'api', 'gatedb');
}

const verbose = () => !!process.env.GATEDB_TEST_VERBOSE;

// No server outlives its test file: servers still running when this process
// exits or is signalled (a test that threw before stop(), a runner that gave
// up) are killed, and where util-linux's setpriv exists the server is started
// with a parent-death signal, which covers a SIGKILL of this process too.
const running = new Set();
const SETPRIV = '/usr/bin/setpriv';
function killRunning() {
  for (const child of running) child.kill('SIGKILL');
}
process.on('exit', killRunning);
for (const [sig, num] of [['SIGTERM', 15], ['SIGINT', 2], ['SIGHUP', 1]]) {
  process.once(sig, () => {
    killRunning();
    process.exit(128 + num);
  });
}

// A running server. Use startServer() to get one.
class GatedbServer {
  constructor(child, dir, ownsDir) {
    this.child = child;
    this.dir = dir;
    this.ownsDir = ownsDir;
    this.port = 0;
    this.stdoutLines = [];
    this.stderrText = '';
    this.exit = null; // {code, signal} once exited
    this.exited = new Promise((resolve) => {
      // 'close' comes after the exit and after stdout and stderr have ended.
      child.on('close', (code, signal) => {
        running.delete(child);
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s) => {
      if (verbose()) process.stderr.write(s);
      this.stderrText += s;
      if (this.stderrText.length > STDERR_KEEP) this.stderrText = this.stderrText.slice(-STDERR_KEEP);
    });
  }

  // The last part of what the server wrote to stderr.
  stderr() {
    return this.stderrText;
  }

  // A connection string. form: 'replicaSet' (the default) or 'direct'.
  uri(form = 'replicaSet', extra = '') {
    const q = form === 'direct' ? 'directConnection=true' : 'replicaSet=gatedb';
    return `mongodb://127.0.0.1:${this.port}/?${q}${extra ? '&' + extra : ''}`;
  }

  alive() {
    return this.exit === null;
  }

  // Stops the server and throws unless it exited with status 0. The data
  // directory is removed when the stop was clean and the directory was ours.
  async stop({ signal = 'SIGTERM', keepDir = false } = {}) {
    if (this.exit !== null) {
      throw new Error(`gatedb serve had already exited (${describeExit(this.exit)}) before the test stopped it\n` +
        `--- server stderr ---\n${this.stderr()}`);
    }
    this.child.kill(signal);
    let timer;
    const timedOut = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), STOP_TIMEOUT_MS);
    });
    const exit = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (exit === null) {
      this.child.kill('SIGKILL');
      await this.exited;
      throw new Error(`gatedb serve did not exit within ${STOP_TIMEOUT_MS} ms of ${signal}\n` +
        `--- server stderr ---\n${this.stderr()}`);
    }
    if (exit.code !== 0 || exit.signal !== null) {
      throw new Error(`gatedb serve exited with ${describeExit(exit)} after ${signal}, expected status 0 ` +
        `(data dir kept: ${this.dir})\n--- server stderr ---\n${this.stderr()}`);
    }
    if (this.stdoutLines.length !== 1) {
      throw new Error(`gatedb serve printed ${this.stdoutLines.length} lines to stdout, expected exactly one ` +
        `ready line: ${JSON.stringify(this.stdoutLines)}`);
    }
    if (this.ownsDir && !keepDir) await rm(this.dir, { recursive: true, force: true });
  }
}

function describeExit({ code, signal }) {
  return signal ? `signal ${signal}` : `status ${code}`;
}

// Starts `gatedb serve --db <fresh temp dir> --port 0 [--quiet] ...extraArgs`.
// options.dir: serve this existing directory instead (it is not removed).
export async function startServer({ extraArgs = [], dir = null } = {}) {
  const bin = gatedbBin();
  if (!existsSync(bin)) {
    throw new Error(`gatedb binary not found at ${bin} (build it, or set GATEDB_BIN)`);
  }
  const ownsDir = dir === null;
  const dataDir = dir ?? await mkdtemp(path.join(os.tmpdir(), 'gatedb-client-test-'));
  const args = ['serve', '--db', dataDir, '--port', '0'];
  if (!verbose()) args.push('--quiet');
  args.push(...extraArgs);
  const [cmd, cmdArgs] = existsSync(SETPRIV)
    ? [SETPRIV, ['--pdeathsig', 'KILL', '--', bin, ...args]]
    : [bin, args];
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const server = new GatedbServer(child, dataDir, ownsDir);

  let spawnError = null;
  child.on('error', (e) => { spawnError = e; });

  const ready = new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s) => {
      buf += s;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        server.stdoutLines.push(line);
        if (server.stdoutLines.length === 1) {
          const m = READY_LINE.exec(line);
          if (!m) {
            reject(new Error(`gatedb serve's first stdout line is not the ready line: ${JSON.stringify(line)}`));
          } else {
            server.port = Number(m[1]);
            resolve();
          }
        }
      }
    });
    server.exited.then((exit) => reject(new Error(
      `gatedb serve exited (${describeExit(exit)}) before printing its ready line` +
      (spawnError ? ` (${spawnError.message})` : ''))));
  });

  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gatedb serve printed no ready line within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS);
  });
  try {
    await Promise.race([ready, timeout]);
  } catch (e) {
    if (server.alive()) {
      child.kill('SIGKILL');
      await server.exited;
    }
    e.message += `\ncommand: ${bin} ${args.join(' ')}\n--- server stderr ---\n${server.stderr()}`;
    if (ownsDir) await rm(dataDir, { recursive: true, force: true });
    throw e;
  } finally {
    clearTimeout(timer);
  }
  if (server.port <= 0 || server.port > 65535) throw new Error(`bad port in ready line: ${server.port}`);
  return server;
}

// A self-signed certificate for localhost and 127.0.0.1 (EC P-256, valid two
// days), made by the openssl command in a fresh temporary directory:
// {dir, certFile (what clients trust: tlsCAFile), pemFile (certificate then
// key: --tlsCertificateKeyFile)}. Remove dir when done.
export async function makeTlsCertificate() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gatedb-tls-'));
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  const pemFile = path.join(dir, 'server.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-days', '2',
    '-keyout', keyFile, '-out', certFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  writeFileSync(pemFile, readFileSync(certFile, 'utf8') + readFileSync(keyFile, 'utf8'), { mode: 0o600 });
  return { dir, certFile, pemFile };
}
