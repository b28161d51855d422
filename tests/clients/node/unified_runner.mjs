// A runner for MongoDB's unified test format (the subset the change-stream
// tests use), driving `gatedb serve` with the official Node.js driver.
//
//   node tests/clients/node/unified_runner.mjs FILE.json ...
//
// MongoDB's own spec tests (github.com/mongodb/specifications,
// source/change-streams/tests/unified) are licensed CC BY-NC-SA and are not
// part of this repository; point the runner at a checkout of them to run
// them:
//
//   node tests/clients/node/unified_runner.mjs specifications/source/change-streams/tests/unified/*.json
//
// The suite (ctest clients_unified_change_streams) runs
// tests/clients/unified/*.json: gatedb's own cases in the same format, for
// what the spec tests check that one node can honour.
//
// Per test it reports pass, fail (with the mismatch) or skip (with the
// reason: a runOnRequirements the server does not meet, or an operation
// gatedb does not have, like failPoint).  Exit status 1 when a test failed.
//
// What the runner follows from the format's specification: root-level
// documents may hold extra fields, nested ones may not; numbers compare by
// value whatever their BSON type; $$exists, $$type, $$unsetOrMatches,
// $$matchesEntity, $$sessionLsid, $$lte; expectEvents compares the
// commandStartedEvents a client observed, in order, hello and
// authentication commands left out.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MongoClient, BSON } from 'mongodb';
import { startServer } from './gatedb_server.mjs';

const { EJSON } = BSON;

// ---- matching -------------------------------------------------------------

class Mismatch extends Error {}

function typeName(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  if (typeof v === 'bigint') return 'long';
  if (v instanceof Date) return 'date';
  const bt = v._bsontype;
  if (bt === 'Long') return 'long';
  if (bt === 'Int32') return 'int';
  if (bt === 'Double') return 'double';
  if (bt === 'Decimal128') return 'decimal';
  if (bt === 'Timestamp') return 'timestamp';
  if (bt === 'ObjectId') return 'objectId';
  if (bt === 'Binary') return 'binData';
  if (bt === 'BSONRegExp' || v instanceof RegExp) return 'regex';
  if (bt === 'MinKey') return 'minKey';
  if (bt === 'MaxKey') return 'maxKey';
  return 'object';
}

function isNumber(v) {
  return ['int', 'long', 'double', 'decimal'].includes(typeName(v));
}

function num(v) {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v && typeof v.toNumber === 'function') return v.toNumber();
  if (v && typeof v.valueOf === 'function') return Number(v.valueOf());
  return NaN;
}

const TYPE_ALIASES = { number: ['int', 'long', 'double', 'decimal'] };

function isOperator(e) {
  return e && typeof e === 'object' && !Array.isArray(e) && typeName(e) === 'object' &&
    Object.keys(e).length === 1 && Object.keys(e)[0].startsWith('$$');
}

// Throws a Mismatch naming the path.  `root`: extra fields are allowed.
function match(expected, actual, where, ctx, root = false) {
  if (isOperator(expected)) {
    const [op] = Object.keys(expected);
    const arg = expected[op];
    switch (op) {
      case '$$exists':
        if ((actual !== undefined) !== arg) throw new Mismatch(`${where}: expected ${arg ? 'present' : 'absent'}`);
        return;
      case '$$type': {
        const want = (Array.isArray(arg) ? arg : [arg]).flatMap((t) => TYPE_ALIASES[t] ?? [t]);
        let got = typeName(actual);
        // JavaScript numbers: an integer may be any numeric type on the wire.
        if (typeof actual === 'number' && Number.isInteger(actual) && want.some((t) => t === 'long' || t === 'double')) return;
        if (!want.includes(got)) throw new Mismatch(`${where}: type ${got}, expected ${want.join('|')}`);
        return;
      }
      case '$$unsetOrMatches':
        if (actual === undefined) return;
        match(arg, actual, where, ctx, root);
        return;
      case '$$matchesEntity':
        match(ctx.entities.get(arg), actual, where, ctx, root);
        return;
      case '$$sessionLsid':
        return;  // sessions are the driver's; any lsid will do here
      case '$$lte':
        if (!(num(actual) <= num(arg))) throw new Mismatch(`${where}: ${actual} > ${arg}`);
        return;
      default:
        throw new Error(`${where}: unsupported operator ${op}`);
    }
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) throw new Mismatch(`${where}: expected an array, got ${typeName(actual)}`);
    if (actual.length !== expected.length) {
      throw new Mismatch(`${where}: ${actual.length} elements, expected ${expected.length}: ${EJSON.stringify(actual)}`);
    }
    expected.forEach((e, i) => match(e, actual[i], `${where}.${i}`, ctx));
    return;
  }
  if (isNumber(expected)) {
    if (!isNumber(actual) || num(actual) !== num(expected)) {
      throw new Mismatch(`${where}: ${EJSON.stringify(actual)}, expected ${EJSON.stringify(expected)}`);
    }
    return;
  }
  if (typeName(expected) === 'object') {
    if (typeName(actual) !== 'object') throw new Mismatch(`${where}: expected a document, got ${EJSON.stringify(actual)}`);
    for (const [k, e] of Object.entries(expected)) {
      match(e, actual[k], `${where}.${k}`, ctx);
    }
    if (!root) {
      for (const k of Object.keys(actual)) {
        // gatedb's version field (PROTOCOL.md, "The version field") is on
        // every stored document: a documented addition, not a mismatch.
        if (k === 'version' && ctx.versionField) continue;
        if (!(k in expected)) throw new Mismatch(`${where}: unexpected field ${k} in ${EJSON.stringify(actual)}`);
      }
    }
    return;
  }
  const a = EJSON.stringify(actual, { relaxed: false });
  const e = EJSON.stringify(expected, { relaxed: false });
  if (a !== e) throw new Mismatch(`${where}: ${a}, expected ${e}`);
}

// ---- requirements ---------------------------------------------------------

function versionLess(a, b) {
  const pa = a.split('.').map(Number), pb = b.split('.').map(Number);
  for (let i = 0; i < 3; ++i) {
    const x = pa[i] ?? 0, y = pb[i] ?? 0;
    if (x !== y) return x < y;
  }
  return false;
}

// null when some requirement is met, else why none is.
function unmet(reqs, server) {
  if (!reqs || reqs.length === 0) return null;
  const why = [];
  for (const r of reqs) {
    if (r.minServerVersion && versionLess(server.version, r.minServerVersion)) {
      why.push(`needs server >= ${r.minServerVersion}`);
    } else if (r.maxServerVersion && versionLess(r.maxServerVersion, server.version)) {
      why.push(`needs server <= ${r.maxServerVersion}`);
    } else if (r.topologies && !r.topologies.includes('replicaset')) {
      // gatedb serve presents itself as a one-member replica set.
      why.push(`needs topology ${r.topologies.join('|')}`);
    } else if (r.serverless === 'require') {
      why.push('needs serverless');
    } else if (r.auth === true) {
      why.push('needs authentication');
    } else if (r.serverParameters) {
      why.push('needs server parameters');
    } else if (r.csfle) {
      why.push('needs CSFLE');
    } else {
      return null;
    }
  }
  return why.join('; ');
}

// Operations gatedb cannot run, and why: a test using one is skipped.
const UNSUPPORTED = {
  failPoint: 'gatedb has no failpoints (configureFailPoint)',
  targetedFailPoint: 'gatedb has no failpoints (configureFailPoint)',
};

// ---- running --------------------------------------------------------------

const IGNORED_COMMANDS = new Set(['hello', 'ismaster', 'isMaster', 'saslStart', 'saslContinue', 'authenticate',
  'getnonce', 'buildInfo', 'endSessions']);

class TestRun {
  constructor(server, file) {
    this.server = server;
    this.file = file;
    this.entities = new Map();
    this.events = new Map();  // client id -> [commandStartedEvent]
    this.clients = [];
    this.versionField = true;
  }

  uri() {
    return this.server.uri('direct');
  }

  async createEntities(list) {
    for (const spec of list ?? []) {
      const [kind, e] = Object.entries(spec)[0];
      if (kind === 'client') {
        const client = new MongoClient(this.uri(), { monitorCommands: true, serverSelectionTimeoutMS: 10000,
          ...(e.uriOptions ?? {}) });
        const observed = new Set(e.observeEvents ?? []);
        const ignored = new Set(e.ignoreCommandMonitoringEvents ?? []);
        const events = [];
        this.events.set(e.id, events);
        client.on('commandStarted', (ev) => {
          if (!observed.has('commandStartedEvent') || ignored.has(ev.commandName) ||
              IGNORED_COMMANDS.has(ev.commandName)) return;
          events.push(ev);
        });
        await client.connect();
        this.clients.push(client);
        this.entities.set(e.id, client);
      } else if (kind === 'database') {
        this.entities.set(e.id, this.entities.get(e.client).db(e.databaseName, e.databaseOptions));
      } else if (kind === 'collection') {
        this.entities.set(e.id, this.entities.get(e.database).collection(e.collectionName, e.collectionOptions));
      } else if (kind === 'session') {
        this.entities.set(e.id, this.entities.get(e.client).startSession(e.sessionOptions));
      } else {
        throw new Error(`unsupported entity ${kind}`);
      }
    }
  }

  async initialData(list, admin) {
    for (const d of list ?? []) {
      const db = admin.db(d.databaseName);
      await db.collection(d.collectionName).drop().catch(() => {});
      if (d.documents.length > 0) {
        await db.collection(d.collectionName).insertMany(d.documents);
      } else {
        await db.createCollection(d.collectionName);
      }
    }
  }

  async run(op) {
    const target = this.entities.get(op.object);
    const a = op.arguments ?? {};
    switch (op.name) {
      case 'createChangeStream': {
        const { pipeline = [], ...options } = a;
        const cs = target.watch(pipeline, options);
        await cs.cursor.cursorInit();
        return cs;
      }
      case 'iterateUntilDocumentOrError':
        return await target.next();
      case 'iterateOnce':
        return await target.tryNext();
      case 'close':
        return await target.close();
      case 'insertOne': {
        const { document, ...options } = a;
        return await target.insertOne(document, options);
      }
      case 'insertMany': {
        const { documents, ...options } = a;
        return await target.insertMany(documents, options);
      }
      case 'updateOne':
      case 'updateMany': {
        const { filter, update, ...options } = a;
        return await target[op.name](filter, update, options);
      }
      case 'replaceOne': {
        const { filter, replacement, ...options } = a;
        return await target.replaceOne(filter, replacement, options);
      }
      case 'deleteOne':
      case 'deleteMany': {
        const { filter, ...options } = a;
        return await target[op.name](filter, options);
      }
      case 'dropCollection':
        return await target.dropCollection(a.collection).catch((e) => {
          if (e.codeName !== 'NamespaceNotFound') throw e;
        });
      case 'createCollection': {
        const { collection, ...options } = a;
        return await target.createCollection(collection, options);
      }
      case 'rename': {
        const { to, ...options } = a;
        return await target.rename(to, options);
      }
      case 'runCommand':
        return await target.command(a.command);
      case 'createIndex': {
        const { keys, ...options } = a;
        return await target.createIndex(keys, options);
      }
      case 'dropIndex':
        return await target.dropIndex(a.name);
      default:
        throw new Error(`unsupported operation ${op.name}`);
    }
  }

  checkError(op, err) {
    const e = op.expectError;
    if (!e) throw err;
    if (e.errorCode !== undefined && err.code !== e.errorCode) {
      throw new Mismatch(`${op.name}: error code ${err.code} (${err.message}), expected ${e.errorCode}`);
    }
    if (e.errorCodeName !== undefined && err.codeName !== e.errorCodeName) {
      throw new Mismatch(`${op.name}: error ${err.codeName}, expected ${e.errorCodeName}`);
    }
    if (e.errorContains !== undefined && !err.message.toLowerCase().includes(e.errorContains.toLowerCase())) {
      throw new Mismatch(`${op.name}: error '${err.message}' lacks '${e.errorContains}'`);
    }
    if (e.isClientError === true && err.code !== undefined && err.errorResponse) {
      throw new Mismatch(`${op.name}: a server error, expected a client error: ${err.message}`);
    }
    for (const l of e.errorLabelsContain ?? []) {
      if (!err.hasErrorLabel?.(l)) throw new Mismatch(`${op.name}: error lacks label ${l}`);
    }
    for (const l of e.errorLabelsOmit ?? []) {
      if (err.hasErrorLabel?.(l)) throw new Mismatch(`${op.name}: error has label ${l}`);
    }
  }

  async operations(ops) {
    for (const op of ops) {
      let result;
      try {
        result = await this.run(op);
      } catch (err) {
        if (err instanceof Mismatch) throw err;
        this.checkError(op, err);
        continue;
      }
      if (op.expectError) throw new Mismatch(`${op.name}: succeeded, expected an error`);
      if (op.saveResultAsEntity) this.entities.set(op.saveResultAsEntity, result);
      if (op.expectResult !== undefined) {
        const actual = result && typeof result === 'object' && !Array.isArray(result) && typeName(result) === 'object'
          ? EJSON.parse(EJSON.stringify(result, { relaxed: true }), { relaxed: true }) : result;
        match(op.expectResult, actual, op.name, this, true);
      }
    }
  }

  checkEvents(expectations) {
    for (const x of expectations ?? []) {
      if (x.eventType && x.eventType !== 'command') continue;
      const got = (this.events.get(x.client) ?? []).map((ev) => ({
        commandName: ev.commandName,
        databaseName: ev.databaseName,
        command: EJSON.parse(EJSON.stringify(ev.command, { relaxed: true }), { relaxed: true }),
      }));
      const want = x.events.map((e) => e.commandStartedEvent).filter(Boolean);
      if (x.ignoreExtraEvents ? got.length < want.length : got.length !== want.length) {
        throw new Mismatch(`${x.client}: ${got.length} commandStartedEvents (${got.map((g) => g.commandName).join(', ')}), ` +
          `expected ${want.length} (${want.map((w) => w.commandName ?? Object.keys(w.command ?? {})[0]).join(', ')})`);
      }
      want.forEach((w, i) => {
        if (w.commandName !== undefined && w.commandName !== got[i].commandName) {
          throw new Mismatch(`event ${i}: ${got[i].commandName}, expected ${w.commandName}`);
        }
        if (w.databaseName !== undefined && w.databaseName !== got[i].databaseName) {
          throw new Mismatch(`event ${i}: database ${got[i].databaseName}, expected ${w.databaseName}`);
        }
        if (w.command) match(w.command, got[i].command, `event ${i} (${got[i].commandName})`, this, true);
      });
    }
  }

  async close() {
    for (const v of this.entities.values()) {
      if (v && typeof v.close === 'function' && v.constructor?.name === 'ChangeStream') await v.close().catch(() => {});
    }
    for (const c of this.clients) await c.close().catch(() => {});
  }
}

function usedOperations(test) {
  return test.operations.map((o) => o.name);
}

async function runFile(file, server, admin, tally) {
  const spec = EJSON.parse(readFileSync(file, 'utf8'), { relaxed: true });
  const name = path.basename(file);
  const fileWhy = unmet(spec.runOnRequirements, server);
  for (const test of spec.tests) {
    const label = `${name}: ${test.description}`;
    const why = fileWhy ?? unmet(test.runOnRequirements, server) ?? (test.skipReason ? `skipReason: ${test.skipReason}` : null) ??
      usedOperations(test).map((o) => UNSUPPORTED[o]).find(Boolean) ?? null;
    if (why) {
      console.log(`skip  ${label} (${why})`);
      tally.skipped.push(label);
      continue;
    }
    const run = new TestRun(server, file);
    try {
      await run.initialData(spec.initialData, admin);
      await run.createEntities(spec.createEntities);
      await run.operations(test.operations);
      run.checkEvents(test.expectEvents);
      console.log(`pass  ${label}`);
      tally.passed.push(label);
    } catch (err) {
      console.log(`FAIL  ${label}\n      ${err instanceof Mismatch ? err.message : err.stack}`);
      tally.failed.push(label);
    } finally {
      await run.close();
    }
  }
}

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: node unified_runner.mjs FILE.json ...');
    process.exit(2);
  }
  const server = await startServer();
  const admin = new MongoClient(server.uri('direct'), { serverSelectionTimeoutMS: 10000 });
  const tally = { passed: [], failed: [], skipped: [] };
  try {
    await admin.connect();
    const info = await admin.db('admin').command({ buildInfo: 1 });
    server.version = info.version;
    for (const f of files) await runFile(f, server, admin, tally);
  } finally {
    await admin.close();
    await server.stop();
  }
  console.log(`${tally.passed.length} passed, ${tally.failed.length} failed, ${tally.skipped.length} skipped`);
  if (tally.passed.length === 0) {
    console.log('no test ran');
    process.exit(1);
  }
  process.exit(tally.failed.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
