// Agents with roles over the wire, through the official Node driver and
// mongosh: SCRAM-SHA-256 authentication (the driver's own, including its
// speculative first step in the handshake), also over TLS with a
// certificate made in the test, wrong passwords, an unauthenticated client,
// and an agent refused a field it may not change.
//
//   GATEDB_BIN=build/api/gatedb node --test tests/clients/node/auth.test.mjs

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { makeTlsCertificate, startServer } from './gatedb_server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MONGOSH = path.join(HERE, 'node_modules', '.bin', 'mongosh');
const T = { timeout: 60_000 };

let server;
let home;

function uri(user, pwd, extra = '') {
  const cred = user ? `${encodeURIComponent(user)}:${encodeURIComponent(pwd)}@` : '';
  return `mongodb://${cred}127.0.0.1:${server.port}/?directConnection=true&serverSelectionTimeoutMS=5000` +
    (user ? '&authSource=admin&authMechanism=SCRAM-SHA-256' : '') + extra;
}

async function withClient(u, fn) {
  const client = new MongoClient(u);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.close();
  }
}

function mongosh(u, script) {
  return new Promise((resolve, reject) => {
    const child = spawn(MONGOSH, ['--quiet', '--norc', u, '--eval', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HOME: home, MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING: '1', NO_COLOR: '1' },
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (s) => { out += s; });
    child.stderr.on('data', (s) => { out += s; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`mongosh hung: ${out}`)); }, 30_000);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code, out }); });
  });
}

describe('gatedb serve --auth with the Node driver and mongosh', () => {
  before(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), 'gatedb-auth-home-'));
    server = await startServer({ extraArgs: ['--auth'] });
    // The localhost exception: the first user, from loopback, unauthenticated.
    await withClient(uri(), async (c) => {
      await c.db('admin').command({ createUser: 'root', pwd: 'root-pass', roles: ['root'] });
    });
    await withClient(uri('root', 'root-pass'), async (c) => {
      const admin = c.db('admin');
      await admin.command({
        createRole: 'orderStatus', roles: [],
        privileges: [{ resource: { db: 'shop', collection: 'orders' }, actions: ['find', 'update'],
          fields: ['status'] }],
      });
      await admin.command({ createUser: 'email-agent', pwd: 'e-pass', roles: [{ role: 'orderStatus', db: 'admin' }] });
      await admin.command({ createUser: 'planner', pwd: 'p-pass', roles: [{ role: 'read', db: 'shop' }] });
      await c.db('shop').collection('orders').insertOne({ _id: 1, status: 'new', price: 10 });
    });
  });

  after(async () => {
    if (server) await server.stop();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('the driver authenticates with SCRAM-SHA-256 and the user is the agent', T, async () => {
    await withClient(uri('email-agent', 'e-pass'), async (c) => {
      const status = await c.db('admin').command({ connectionStatus: 1 });
      assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'email-agent', db: 'admin' }]);
      const orders = c.db('shop').collection('orders');
      const r = await orders.updateOne({ _id: 1 }, { $set: { status: 'paid' } });
      assert.equal(r.modifiedCount, 1);
      await assert.rejects(orders.updateOne({ _id: 1 }, { $set: { price: 0 } }), (e) => {
        assert.equal(e.code, 13);
        assert.equal(e.errInfo?.path, 'price');
        assert.equal(e.errInfo?.agentId, 'email-agent');
        return true;
      });
      await assert.rejects(orders.insertOne({ _id: 2 }), (e) => e.code === 13);
      // writeContext naming another agent (the driver passes it through runCommand).
      await assert.rejects(c.db('shop').command({
        update: 'orders', updates: [{ q: { _id: 1 }, u: { $set: { status: 'x' } } }],
        writeContext: { agentId: 'planner' },
      }), (e) => e.code === 13);
    });
    await withClient(uri('root', 'root-pass'), async (c) => {
      const doc = await c.db('shop').collection('orders').findOne({ _id: 1 });
      assert.equal(doc.status, 'paid');
      assert.equal(doc.price, 10);
      const stats = await c.db('shop').command({ conflictStats: 'orders' });
      assert.equal(stats.unauthorized >= 2, true, JSON.stringify(stats));
      assert.equal(stats.agents.find((a) => a.agentId === 'email-agent')?.unauthorized >= 2, true);
    });
  });

  it('a wrong password fails the connection with AuthenticationFailed', T, async () => {
    const client = new MongoClient(uri('email-agent', 'wrong'));
    await assert.rejects(client.connect(), (e) => {
      assert.match(String(e.message), /Authentication failed/);
      return true;
    });
    await client.close();
  });

  it('an unauthenticated client may ping but not read or write', T, async () => {
    await withClient(uri(), async (c) => {
      assert.equal((await c.db('admin').command({ ping: 1 })).ok, 1);
      await assert.rejects(c.db('shop').collection('orders').findOne({}), (e) => e.code === 13);
      await assert.rejects(c.db('shop').collection('orders').insertOne({ _id: 9 }), (e) => e.code === 13);
    });
  });

  it('over TLS, the driver and mongosh authenticate with SCRAM-SHA-256', T, async () => {
    const cert = await makeTlsCertificate();
    const tls = await startServer({ extraArgs: ['--auth', '--tlsCertificateKeyFile', cert.pemFile] });
    try {
      const ca = encodeURIComponent(cert.certFile);
      const base = `mongodb://127.0.0.1:${tls.port}/?directConnection=true&serverSelectionTimeoutMS=5000` +
        `&tls=true&tlsCAFile=${ca}`;
      // The localhost exception over TLS, then SCRAM over TLS.
      await withClient(base, async (c) => {
        await c.db('admin').command({ createUser: 'tls-agent', pwd: 't-pass', roles: [{ role: 'read', db: 'shop' }] });
      });
      const authed = base.replace('mongodb://', 'mongodb://tls-agent:t-pass@') + '&authSource=admin';
      await withClient(authed, async (c) => {
        const status = await c.db('admin').command({ connectionStatus: 1 });
        assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'tls-agent', db: 'admin' }]);
        await assert.rejects(c.db('shop').collection('orders').insertOne({ _id: 1 }), (e) => e.code === 13);
      });
      const wrong = base.replace('mongodb://', 'mongodb://tls-agent:wrong@') + '&authSource=admin';
      await assert.rejects(withClient(wrong, async () => {}), /Authentication failed/);
      const r = await mongosh(authed, 'db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers[0].user');
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /tls-agent/);
    } finally {
      await tls.stop();
      await rm(cert.dir, { recursive: true, force: true });
    }
  });

  it('mongosh authenticates, reads as the planner and is refused a write', T, async () => {
    const r = await mongosh(uri('planner', 'p-pass'), 'printjson(db.getSiblingDB("shop").orders.findOne({_id: 1}))');
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /status: 'paid'/);
    const w = await mongosh(uri('planner', 'p-pass'), 'db.getSiblingDB("shop").orders.insertOne({_id: 3})');
    assert.notEqual(w.code, 0);
    assert.match(w.out, /not authorized|Unauthorized/);
    const bad = await mongosh(uri('planner', 'nope'), 'db.runCommand({ping: 1})');
    assert.notEqual(bad.code, 0);
    assert.match(bad.out, /Authentication failed/);
  });
});
