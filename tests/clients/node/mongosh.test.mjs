// gatedb serve, driven by mongosh (the MongoDB Shell) as a person would:
// one `mongosh --quiet --norc <uri> --eval <script>` process per step,
// checking what it prints and its exit status.
//
//   GATEDB_BIN=build/api/gatedb node --test tests/clients/node/mongosh.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTlsCertificate, startServer } from './gatedb_server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MONGOSH = path.join(HERE, 'node_modules', '.bin', 'mongosh');
const RUN_TIMEOUT_MS = 30_000;
const T = { timeout: 60_000 };

let server;
let home; // mongosh writes its logs and history under $HOME/.mongodb

// Runs mongosh once; resolves {code, stdout, stderr}. `uri` may be a full URI.
function mongosh(uri, script, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(MONGOSH, ['--quiet', '--norc', ...extraArgs, uri, '--eval', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        HOME: home,
        // No telemetry and no update check: this machine reaches no other host.
        MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING: '1',
        NO_COLOR: '1',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s) => { stdout += s; });
    child.stderr.on('data', (s) => { stderr += s; });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mongosh did not finish within ${RUN_TIMEOUT_MS} ms\nscript: ${script}\n` +
        `stdout: ${stdout}\nstderr: ${stderr}\n--- server stderr ---\n${server.stderr()}`));
    }, RUN_TIMEOUT_MS);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// Runs a script that must succeed and returns its stdout.
async function ok(uri, script) {
  const r = await mongosh(uri, script);
  assert.equal(r.code, 0, `mongosh exited ${r.code}\nscript: ${script}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.stdout;
}

describe('gatedb serve with mongosh', () => {
  before(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), 'gatedb-mongosh-home-'));
    server = await startServer();
  });

  after(async () => {
    // SIGINT here (the driver suite stops with SIGTERM): both must be a clean stop.
    if (server) await server.stop({ signal: 'SIGINT' });
    if (home) await rm(home, { recursive: true, force: true });
  });

  // gatedb stores the version as int64 (PROTOCOL.md, "The version field"),
  // and mongosh prints an int64 as Long('n'); an int32 would print as a bare n.
  it('insertOne prints its result, find prints the document with its version', T, async () => {
    const uri = server.uri('replicaSet').replace('/?', '/shell?');
    const inserted = await ok(uri, 'db.c.insertOne({_id: 1, name: "ana", tags: ["x", "y"]})');
    assert.equal(inserted.trim(), '{ acknowledged: true, insertedId: 1 }');

    const found = await ok(uri, 'db.c.find()');
    assert.match(found, /_id: 1,/);
    assert.match(found, /name: 'ana'/);
    assert.match(found, /tags: \[ 'x', 'y' \]/);
    assert.match(found, /version: Long\('0'\)/);

    // Two statements in one script; the update's version step shows in the next find.
    const updated = await ok(uri, 'db.c.updateOne({_id: 1}, {$set: {name: "bo"}}); db.c.findOne({_id: 1})');
    assert.match(updated, /name: 'bo'/);
    assert.match(updated, /version: Long\('1'\)/);
    // The value compares by number whatever its type.
    assert.equal((await ok(uri, 'db.c.countDocuments({version: 1})')).trim(), '1');
  });

  it('countDocuments prints the count (directConnection=true)', T, async () => {
    const uri = server.uri('direct').replace('/?', '/shell_count?');
    await ok(uri, 'db.c.insertMany([{_id: 1}, {_id: 2}, {_id: 3}])');
    assert.equal((await ok(uri, 'db.c.countDocuments()')).trim(), '3');
    assert.equal((await ok(uri, 'db.c.countDocuments({_id: {$gt: 1}})')).trim(), '2');
    assert.equal((await ok(uri, 'db.getCollectionNames().join(",")')).trim(), 'c');
  });

  it('db.adminCommand({ping: 1}) prints { ok: 1 }', T, async () => {
    const out = await ok(server.uri('replicaSet'), 'db.adminCommand({ping: 1})');
    assert.equal(out.trim(), '{ ok: 1 }');
  });

  // An uncaught error in --eval: mongosh prints `<name>: <errmsg>` and exits 1
  // (the `[codeName]` form is the interactive shell's); --json=relaxed prints
  // the whole error, codeName included.
  it('a server error makes mongosh exit non-zero and print the MongoDB error', T, async () => {
    const uri = server.uri('replicaSet').replace('/?', '/shell_err?');
    await ok(uri, 'db.c.insertOne({_id: 1, a: 1})');

    const conflict = await mongosh(uri, 'db.c.updateOne({_id: 1}, {$set: {a: 2}, $inc: {a: 1}})');
    assert.equal(conflict.code, 1, 'mongosh exits 1 on an uncaught server error');
    assert.match(conflict.stdout + conflict.stderr,
      /MongoServerError: Updating the path 'a' would create a conflict at 'a'/);

    const asJson = await mongosh(uri, 'db.c.updateOne({_id: 1}, {$set: {a: 2}, $inc: {a: 1}})', ['--json=relaxed']);
    assert.equal(asJson.code, 1);
    const err = JSON.parse(asJson.stdout);
    assert.equal(err.name, 'MongoServerError');
    assert.equal(err.code, 40);
    assert.equal(err.codeName, 'ConflictingUpdateOperators');

    const dup = await mongosh(uri, 'db.c.insertOne({_id: 1})');
    assert.equal(dup.code, 1);
    assert.match(dup.stdout + dup.stderr,
      /MongoServerError: E11000 duplicate key error collection: shell_err\.c index: _id_ dup key: \{ _id: 1 \}/);

    // mongosh's runCommand throws on ok: 0 (the legacy mongo shell returned the reply).
    const unknown = await mongosh(uri, 'db.runCommand({noSuchCommandForGatedb: 1})');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stdout + unknown.stderr, /MongoServerError: no such command: 'noSuchCommandForGatedb'/);

    // The failed scripts changed nothing.
    const found = await ok(uri, 'db.c.find()');
    assert.match(found, /a: 1,/);
    assert.match(found, /version: Long\('0'\)/);
  });

  it('gatedb\'s own commands work from the shell: a stale basisVersion is a VersionConflict', T, async () => {
    const uri = server.uri('direct').replace('/?', '/shell_gate?');
    await ok(uri, 'db.orders.insertOne({_id: "o1", status: "open"})');
    const script = (basis, status) => `
      const r = db.runCommand({update: "orders",
        updates: [{q: {_id: "o1"}, u: {$set: {status: "${status}"}}, basisVersion: ${basis}}],
        writeContext: {agentId: "shell-agent"}});
      print(EJSON.stringify({n: r.n, nModified: r.nModified, codeName: r.writeErrors ? r.writeErrors[0].codeName : null}));`;
    assert.equal((await ok(uri, script(0, 'paid'))).trim(), '{"n":1,"nModified":1,"codeName":null}');
    assert.equal((await ok(uri, script(0, 'void'))).trim(), '{"n":0,"nModified":0,"codeName":"VersionConflict"}');
    const events = await ok(uri,
      'print(EJSON.stringify(db.runCommand({journal: "orders", afterSeq: 0}).events.map(e => [e.op, e.writeContext && e.writeContext.agentId || null])))');
    assert.equal(events.trim(), '[["insert",null],["update","shell-agent"],["conflict","shell-agent"]]');
  });
  it('watch() from the shell: a change stream sees the shell\'s own writes', T, async () => {
    const uri = server.uri('direct').replace('/?', '/shell_watch?');
    const out = await ok(uri, `
      db.createCollection("feed");
      const cs = db.feed.watch([], {fullDocument: "updateLookup"});
      cs.disableBlockWarnings();
      db.feed.insertOne({_id: 1, n: 1});
      db.feed.updateOne({_id: 1}, {$inc: {n: 5}});
      const a = cs.next();
      const b = cs.next();
      print(EJSON.stringify([a.operationType, a.fullDocument.n, b.operationType, b.updateDescription.updatedFields.n,
                             b.fullDocument.n, typeof a._id._data]));
      cs.close();`);
    assert.equal(out.trim(), '["insert",1,"update",6,6,"string"]');
  });
});

describe('gatedb serve over TLS with mongosh', () => {
  let tlsServer;
  let cert;

  before(async () => {
    // The first suite removed its HOME when it ended.
    home = await mkdtemp(path.join(os.tmpdir(), 'gatedb-mongosh-home-'));
    cert = await makeTlsCertificate();
    tlsServer = await startServer({ extraArgs: ['--tlsCertificateKeyFile', cert.pemFile, '--tlsMode', 'requireTLS'] });
  });

  after(async () => {
    if (tlsServer) await tlsServer.stop({ signal: 'SIGINT' });
    if (cert) await rm(cert.dir, { recursive: true, force: true });
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('tls=true&tlsCAFile in the URI: insertOne and findOne round trip', T, async () => {
    const uri = tlsServer.uri('replicaSet', `tls=true&tlsCAFile=${encodeURIComponent(cert.certFile)}`)
      .replace('/?', '/shell_tls?');
    const inserted = await ok(uri, 'db.c.insertOne({_id: 1, over: "tls"})');
    assert.equal(inserted.trim(), '{ acknowledged: true, insertedId: 1 }');
    const found = await ok(uri, 'EJSON.stringify(db.c.findOne({_id: 1}))');
    assert.equal(found.trim(), '{"_id":1,"over":"tls","version":0}');
  });

  it('the shell\'s own TLS flags work too; without TLS mongosh fails', T, async () => {
    const direct = tlsServer.uri('direct');
    const r = await mongosh(direct, 'db.adminCommand({ping: 1}).ok', ['--tls', '--tlsCAFile', cert.certFile]);
    assert.equal(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.equal(r.stdout.trim(), '1');
    const plain = await mongosh(`${direct}&serverSelectionTimeoutMS=2000`, 'db.adminCommand({ping: 1}).ok');
    assert.notEqual(plain.code, 0, `a plaintext mongosh connected: ${plain.stdout}`);
  });
});
