// gatedb serve, driven by the official MongoDB Node.js driver.
//
//   GATEDB_BIN=build/api/gatedb node --test tests/clients/node/driver.test.mjs
//
// Every assertion is MongoDB's documented behaviour (or gatedb's documented
// addition, named as such): a failure here means the server differs from
// what a driver expects. One server for the whole file, one collection per
// test; the server must stop with status 0 at the end.

import { describe, it, before, after } from 'node:test';
import { rm } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { MongoClient, MongoServerError, MongoBulkWriteError, ObjectId, Long, Double, BSON } from 'mongodb';
import { makeTlsCertificate, startServer } from './gatedb_server.mjs';
import { ReplyDroppingProxy } from './reply_dropping_proxy.mjs';

const DB = 'clienttest';
const T = { timeout: 60_000 };

let server;
let main; // a MongoClient on the replicaSet=gatedb connection string
const clients = [];

// A connected MongoClient that records its command-monitoring events in
// client.events ({kind: 'started'|'succeeded'|'failed', name, command|reply|failure}).
async function connect(uri, options = {}, beforeConnect = null) {
  const client = new MongoClient(uri, {
    serverSelectionTimeoutMS: 10_000,
    connectTimeoutMS: 5_000,
    monitorCommands: true,
    ...options,
  });
  client.events = [];
  client.on('commandStarted', (e) => client.events.push({ kind: 'started', name: e.commandName, command: e.command }));
  client.on('commandSucceeded', (e) => client.events.push({ kind: 'succeeded', name: e.commandName, reply: e.reply }));
  client.on('commandFailed', (e) => client.events.push({ kind: 'failed', name: e.commandName, failure: e.failure }));
  if (beforeConnect) beforeConnect(client);
  clients.push(client);
  await client.connect();
  return client;
}

function isZeroCursorId(id) {
  return Long.isLong(id) ? id.isZero() : Number(id) === 0;
}

// Every `stage` named anywhere in an explain plan.
function stagesOf(plan, out = []) {
  if (Array.isArray(plan)) {
    for (const p of plan) stagesOf(p, out);
  } else if (plan && typeof plan === 'object') {
    if (typeof plan.stage === 'string') out.push(plan.stage);
    for (const v of Object.values(plan)) if (v && typeof v === 'object') stagesOf(v, out);
  }
  return out;
}

async function rejectsWithCode(promise, code, codeName) {
  let err = null;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected a server error ${codeName} (${code}), got success`);
  assert.ok(err instanceof MongoServerError, `expected a MongoServerError, got ${err && err.name}: ${err && err.message}`);
  assert.equal(err.code, code, `code: ${err.message}`);
  if (codeName) assert.equal(err.codeName, codeName, `codeName: ${err.message}`);
  return err;
}

describe('gatedb serve with the Node.js driver', () => {
  before(async () => {
    server = await startServer();
    main = await connect(server.uri('replicaSet'));
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    if (server) await server.stop();
  });

  it('connects with replicaSet=gatedb and finds a replica-set primary', T, async () => {
    const topologyTypes = [];
    const serverTypes = [];
    const c = await connect(server.uri('replicaSet'), {}, (cl) => {
      cl.on('topologyDescriptionChanged', (e) => topologyTypes.push(e.newDescription.type));
      cl.on('serverDescriptionChanged', (e) => serverTypes.push(e.newDescription.type));
    });
    const ping = await c.db('admin').command({ ping: 1 });
    assert.equal(ping.ok, 1);
    assert.equal(topologyTypes.at(-1), 'ReplicaSetWithPrimary');
    assert.ok(serverTypes.includes('RSPrimary'), `server types seen: ${serverTypes}`);

    const me = `127.0.0.1:${server.port}`;
    const h = await c.db('admin').command({ hello: 1 });
    assert.equal(h.ok, 1);
    assert.equal(h.isWritablePrimary, true);
    assert.equal(h.secondary, false);
    assert.equal(h.setName, 'gatedb');
    assert.deepEqual(h.hosts, [me]);
    assert.equal(h.primary, me);
    assert.equal(h.me, me);
    assert.equal(h.maxWireVersion, 21);
    assert.equal(h.minWireVersion, 0);
    assert.equal(h.logicalSessionTimeoutMinutes, 30);
    assert.equal(h.maxBsonObjectSize, 16 * 1024 * 1024);
    assert.equal(h.maxMessageSizeBytes, 48_000_000);
    assert.equal(h.maxWriteBatchSize, 100_000);
    assert.ok(h.localTime instanceof Date, 'hello.localTime is a date');
    assert.equal(typeof h.connectionId, 'number');

    // The legacy name answers with the legacy field.
    const im = await c.db('admin').command({ isMaster: 1 });
    assert.equal(im.ok, 1);
    assert.equal(im.ismaster, true);
    assert.equal(im.setName, 'gatedb');
  });

  it('connects with directConnection=true', T, async () => {
    const topologyTypes = [];
    const serverTypes = [];
    const c = await connect(server.uri('direct'), {}, (cl) => {
      cl.on('topologyDescriptionChanged', (e) => topologyTypes.push(e.newDescription.type));
      cl.on('serverDescriptionChanged', (e) => serverTypes.push(e.newDescription.type));
    });
    const coll = c.db(DB).collection('direct_conn');
    await coll.insertOne({ _id: 'd1' });
    assert.deepEqual(await coll.findOne({ _id: 'd1' }), { _id: 'd1', version: 0 });
    assert.equal(topologyTypes.at(-1), 'Single');
    assert.equal(serverTypes.at(-1), 'RSPrimary');
  });

  it('insertOne and insertMany: result shapes, and every document starts at version 0', T, async () => {
    const coll = main.db(DB).collection('crud_insert');
    const r1 = await coll.insertOne({ _id: 1, name: 'ana' });
    assert.deepEqual({ ...r1 }, { acknowledged: true, insertedId: 1 });

    // The driver makes the _id; a version the client sends is replaced by 0.
    const r2 = await coll.insertOne({ name: 'bo', version: 17 });
    assert.ok(r2.insertedId instanceof ObjectId);

    const r3 = await coll.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }, { _id: 'c', n: 3 }]);
    assert.deepEqual({ ...r3 }, { acknowledged: true, insertedCount: 3, insertedIds: { 0: 'a', 1: 'b', 2: 'c' } });

    const docs = await coll.find({}, { sort: { _id: 1 } }).toArray();
    // BSON order: numbers, then strings, then ObjectIds.
    assert.deepEqual(docs, [
      { _id: 1, name: 'ana', version: 0 },
      { _id: 'a', n: 1, version: 0 },
      { _id: 'b', n: 2, version: 0 },
      { _id: 'c', n: 3, version: 0 },
      { _id: r2.insertedId, name: 'bo', version: 0 },
    ]);
  });

  it('updateOne, updateMany and replaceOne: counts, upsertedId, and one version step per change', T, async () => {
    const coll = main.db(DB).collection('crud_update');
    await coll.insertMany([{ _id: 1, a: 1, g: 'x' }, { _id: 2, a: 2, g: 'x' }, { _id: 3, a: 3, g: 'y' }]);
    const none = { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null };

    let r = await coll.updateOne({ _id: 1 }, { $set: { a: 10 } });
    assert.deepEqual({ ...r }, { ...none, matchedCount: 1, modifiedCount: 1 });
    assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, a: 10, g: 'x', version: 1 });

    // Matched but unchanged: not modified, and the version stays.
    r = await coll.updateOne({ _id: 1 }, { $set: { a: 10 } });
    assert.deepEqual({ ...r }, { ...none, matchedCount: 1 });
    assert.equal((await coll.findOne({ _id: 1 })).version, 1);

    r = await coll.updateOne({ _id: 99 }, { $set: { a: 0 } });
    assert.deepEqual({ ...r }, none);

    r = await coll.updateOne({ _id: 'u' }, { $set: { a: 5 } }, { upsert: true });
    assert.deepEqual({ ...r }, { ...none, upsertedCount: 1, upsertedId: 'u' });
    assert.deepEqual(await coll.findOne({ _id: 'u' }), { _id: 'u', a: 5, version: 0 });

    r = await coll.updateMany({ g: 'x' }, { $inc: { a: 1 } });
    assert.deepEqual({ ...r }, { ...none, matchedCount: 2, modifiedCount: 2 });
    assert.deepEqual(await coll.find({ g: 'x' }, { sort: { _id: 1 } }).toArray(), [
      { _id: 1, a: 11, g: 'x', version: 2 },
      { _id: 2, a: 3, g: 'x', version: 1 },
    ]);

    r = await coll.updateMany({ g: 'nothing' }, { $set: { z: 1 } });
    assert.deepEqual({ ...r }, none);

    // A replacement keeps _id, and the store keeps counting the version.
    r = await coll.replaceOne({ _id: 3 }, { a: 30, g: 'y' });
    assert.deepEqual({ ...r }, { ...none, matchedCount: 1, modifiedCount: 1 });
    assert.deepEqual(await coll.findOne({ _id: 3 }), { _id: 3, a: 30, g: 'y', version: 1 });

    r = await coll.replaceOne({ _id: 'r' }, { a: 1 }, { upsert: true });
    assert.deepEqual({ ...r }, { ...none, upsertedCount: 1, upsertedId: 'r' });
    assert.deepEqual(await coll.findOne({ _id: 'r' }), { _id: 'r', a: 1, version: 0 });

    // The MongoDB idiom: the version in the filter, $inc of the version is one step, not two.
    r = await coll.updateOne({ _id: 3, version: 1 }, { $set: { a: 31 }, $inc: { version: 1 } });
    assert.deepEqual({ ...r }, { ...none, matchedCount: 1, modifiedCount: 1 });
    assert.deepEqual(await coll.findOne({ _id: 3 }), { _id: 3, a: 31, g: 'y', version: 2 });
    // A stale version in the filter matches nothing, as on MongoDB.
    r = await coll.updateOne({ _id: 3, version: 1 }, { $set: { a: 32 } });
    assert.deepEqual({ ...r }, none);
    assert.equal((await coll.findOne({ _id: 3 })).a, 31);

    // The store owns the version: $set of it is ImmutableField; conflicting paths are error 40.
    await rejectsWithCode(coll.updateOne({ _id: 3 }, { $set: { version: 7 } }), 66, 'ImmutableField');
    await rejectsWithCode(coll.updateOne({ _id: 3 }, { $set: { a: 1 }, $inc: { a: 1 } }), 40, 'ConflictingUpdateOperators');
    await rejectsWithCode(coll.updateOne({ _id: 3 }, { $set: { _id: 4 } }), 66, 'ImmutableField');
    assert.deepEqual(await coll.findOne({ _id: 3 }), { _id: 3, a: 31, g: 'y', version: 2 });
  });

  it('deleteOne and deleteMany: deletedCount', T, async () => {
    const coll = main.db(DB).collection('crud_delete');
    await coll.insertMany([{ _id: 1, k: 'a' }, { _id: 2, k: 'a' }, { _id: 3, k: 'a' }, { _id: 4, k: 'b' }]);
    assert.deepEqual({ ...await coll.deleteOne({ k: 'a' }) }, { acknowledged: true, deletedCount: 1 });
    assert.deepEqual({ ...await coll.deleteOne({ k: 'zzz' }) }, { acknowledged: true, deletedCount: 0 });
    assert.deepEqual({ ...await coll.deleteMany({ k: 'a' }) }, { acknowledged: true, deletedCount: 2 });
    assert.deepEqual({ ...await coll.deleteMany({ k: 'a' }) }, { acknowledged: true, deletedCount: 0 });
    assert.deepEqual(await coll.find().toArray(), [{ _id: 4, k: 'b', version: 0 }]);
    assert.deepEqual({ ...await coll.deleteMany({}) }, { acknowledged: true, deletedCount: 1 });
    assert.equal(await coll.countDocuments(), 0);
  });

  it('findOneAndUpdate, findOneAndReplace and findOneAndDelete: documents before and after', T, async () => {
    const coll = main.db(DB).collection('crud_fam');
    await coll.insertOne({ _id: 1, n: 0 });

    assert.deepEqual(await coll.findOneAndUpdate({ _id: 1 }, { $inc: { n: 1 } }, { returnDocument: 'after' }),
      { _id: 1, n: 1, version: 1 });
    // The default is the document before the update.
    assert.deepEqual(await coll.findOneAndUpdate({ _id: 1 }, { $inc: { n: 1 } }), { _id: 1, n: 1, version: 1 });
    assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, n: 2, version: 2 });

    let res = await coll.findOneAndUpdate({ _id: 2 }, { $set: { n: 5 } },
      { upsert: true, returnDocument: 'after', includeResultMetadata: true });
    assert.equal(res.ok, 1);
    assert.deepEqual(res.value, { _id: 2, n: 5, version: 0 });
    assert.equal(res.lastErrorObject.n, 1);
    assert.equal(res.lastErrorObject.updatedExisting, false);
    assert.equal(res.lastErrorObject.upserted, 2);

    res = await coll.findOneAndUpdate({ _id: 404 }, { $set: { n: 1 } }, { includeResultMetadata: true });
    assert.equal(res.ok, 1);
    assert.equal(res.value, null);
    assert.equal(res.lastErrorObject.n, 0);
    assert.equal(res.lastErrorObject.updatedExisting, false);
    assert.equal(await coll.findOneAndUpdate({ _id: 404 }, { $set: { n: 1 } }), null);

    assert.deepEqual(await coll.findOneAndUpdate({ _id: 2 }, { $inc: { n: 1 } },
      { returnDocument: 'after', projection: { n: 1, _id: 0 } }), { n: 6 });

    assert.deepEqual(await coll.findOneAndReplace({ _id: 1 }, { n: 100 }, { returnDocument: 'after' }),
      { _id: 1, n: 100, version: 3 });
    assert.deepEqual(await coll.findOneAndDelete({ _id: 1 }), { _id: 1, n: 100, version: 3 });
    assert.equal(await coll.findOne({ _id: 1 }), null);
    assert.deepEqual(await coll.find().toArray(), [{ _id: 2, n: 6, version: 1 }]);
  });

  it('bulkWrite: ordered mixed operations report every count and the upserted index', T, async () => {
    const coll = main.db(DB).collection('crud_bulk');
    await coll.insertMany([{ _id: 1, k: 1 }, { _id: 2, k: 1 }, { _id: 3, k: 2 }]);
    const res = await coll.bulkWrite([
      { insertOne: { document: { _id: 4, k: 2 } } }, // 0
      { updateOne: { filter: { _id: 1 }, update: { $set: { s: 'a' } } } }, // 1: matched, modified
      { updateMany: { filter: { k: 2 }, update: { $set: { s: 'b' } } } }, // 2: 3 and 4
      { updateOne: { filter: { _id: 9 }, update: { $set: { s: 'c' } }, upsert: true } }, // 3: upsert
      { replaceOne: { filter: { _id: 2 }, replacement: { k: 1, s: 'r' } } }, // 4
      { updateOne: { filter: { _id: 1 }, update: { $set: { s: 'a' } } } }, // 5: matched, unchanged
      { deleteOne: { filter: { _id: 3 } } }, // 6
      { deleteMany: { filter: { k: 1 } } }, // 7: 1 and 2
    ]);
    assert.equal(res.ok, 1);
    assert.equal(res.insertedCount, 1);
    assert.equal(res.matchedCount, 5);
    assert.equal(res.modifiedCount, 4);
    assert.equal(res.deletedCount, 3);
    assert.equal(res.upsertedCount, 1);
    assert.deepEqual(res.upsertedIds, { 3: 9 });
    assert.deepEqual(res.insertedIds, { 0: 4 });
    assert.deepEqual(await coll.find({}, { sort: { _id: 1 } }).toArray(), [
      { _id: 4, k: 2, s: 'b', version: 1 },
      { _id: 9, s: 'c', version: 0 },
    ]);

    // Unordered: the duplicate fails alone, everything else runs.
    let err = null;
    try {
      await coll.bulkWrite([
        { insertOne: { document: { _id: 4 } } },
        { insertOne: { document: { _id: 5, k: 5 } } },
        { updateOne: { filter: { _id: 5 }, update: { $set: { s: 'new' } } } },
      ], { ordered: false });
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof MongoBulkWriteError, `expected MongoBulkWriteError, got ${err}`);
    assert.equal(err.code, 11000);
    assert.equal(err.writeErrors.length, 1);
    assert.equal(err.writeErrors[0].index, 0);
    assert.equal(err.writeErrors[0].code, 11000);
    assert.equal(err.result.insertedCount, 1);
    assert.equal(err.result.matchedCount, 1);
    assert.deepEqual(await coll.findOne({ _id: 5 }), { _id: 5, k: 5, s: 'new', version: 1 });
  });

  it('find with batchSize 10 pages 250 documents through getMore; the cursor reads the snapshot it opened on', T, async () => {
    const coll = main.db(DB).collection('paging');
    await coll.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i, v: i })));
    const from = main.events.length;
    const events = () => main.events.slice(from);

    const seen = [];
    const cursor = coll.find({}, { batchSize: 10, sort: { _id: 1 } });
    for await (const doc of cursor) {
      seen.push(doc._id);
      if (seen.length === 10) {
        // The first batch is used up; the driver has not asked for more yet.
        assert.equal(events().filter((e) => e.name === 'getMore').length, 0);
        // Between batches: one document inserted past the cursor's position,
        // one deleted that the cursor has not reached yet.
        await coll.insertOne({ _id: 1000, v: 1000 });
        assert.equal((await coll.deleteOne({ _id: 200 })).deletedCount, 1);
      }
      assert.ok(seen.length <= 260, 'the cursor does not end');
    }

    const find = events().find((e) => e.kind === 'succeeded' && e.name === 'find');
    assert.equal(find.reply.cursor.firstBatch.length, 10);
    assert.ok(!isZeroCursorId(find.reply.cursor.id), 'find leaves a cursor open');
    assert.equal(find.reply.cursor.ns, `${DB}.paging`);

    const gmStarted = events().filter((e) => e.kind === 'started' && e.name === 'getMore');
    const gmDone = events().filter((e) => e.kind === 'succeeded' && e.name === 'getMore');
    assert.equal(events().filter((e) => e.kind === 'failed' && e.name === 'getMore').length, 0);
    // 240 documents after the first batch: 24 full batches, and MongoDB may
    // need one more (empty) getMore to learn that the cursor is exhausted.
    assert.ok(gmDone.length === 24 || gmDone.length === 25, `getMores: ${gmDone.length}`);
    assert.equal(gmStarted.length, gmDone.length);
    for (const g of gmStarted) {
      assert.equal(g.command.collection, 'paging');
      assert.equal(g.command.batchSize, 10);
    }
    let paged = 0;
    gmDone.forEach((g, i) => {
      assert.ok(g.reply.cursor.nextBatch.length <= 10);
      paged += g.reply.cursor.nextBatch.length;
      assert.equal(isZeroCursorId(g.reply.cursor.id), i === gmDone.length - 1, `cursor id of getMore ${i}`);
    });
    assert.equal(paged, 240);
    assert.equal(events().filter((e) => e.name === 'killCursors').length, 0, 'an exhausted cursor needs no killCursors');

    // gatedb documents that a cursor reads the snapshot taken when it opened
    // (README, "Indexes and explain"): it returns _id 200 (deleted after it
    // opened) and not _id 1000 (inserted after it opened), every document
    // once and in order. (MongoDB gives no snapshot across getMores outside
    // a transaction; there, 200 would usually be missing and 1000 present.)
    assert.equal(seen.length, 250);
    assert.deepEqual(seen, Array.from({ length: 250 }, (_, i) => i));

    assert.equal(await coll.countDocuments(), 250);
    assert.deepEqual(await coll.find({ _id: { $in: [200, 1000] } }).toArray(), [{ _id: 1000, v: 1000, version: 0 }]);
  });

  it('killCursors answers MongoDB\'s four lists; a killed cursor is CursorNotFound', T, async () => {
    const db = main.db(DB);
    const coll = db.collection('killing');
    await coll.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i })));
    const r = await db.command({ find: 'killing', batchSize: 5 });
    assert.equal(r.cursor.firstBatch.length, 5);
    // Cursor ids are int64; keep them as Long so they go back as int64.
    const id = Long.isLong(r.cursor.id) ? r.cursor.id : Long.fromNumber(r.cursor.id);
    assert.ok(!isZeroCursorId(id));
    const more = await db.command({ getMore: id, collection: 'killing', batchSize: 5 });
    assert.deepEqual(more.cursor.nextBatch.map((d) => d._id), [5, 6, 7, 8, 9]);
    const k = await db.command({ killCursors: 'killing', cursors: [id, Long.fromNumber(123456789)] });
    assert.equal(k.ok, 1);
    assert.equal(k.cursorsKilled.length, 1);
    assert.ok(Long.fromValue(k.cursorsKilled[0]).equals(Long.fromValue(id)));
    assert.equal(k.cursorsNotFound.length, 1);
    assert.deepEqual(k.cursorsAlive, []);
    assert.deepEqual(k.cursorsUnknown, []);
    await rejectsWithCode(db.command({ getMore: id, collection: 'killing' }), 43, 'CursorNotFound');
  });

  it('countDocuments with skip and limit, and estimatedDocumentCount', T, async () => {
    const coll = main.db(DB).collection('counting');
    await coll.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, odd: i % 2 === 1 })));
    assert.equal(await coll.countDocuments(), 50);
    assert.equal(await coll.countDocuments({ odd: true }), 25);
    assert.equal(await coll.countDocuments({ odd: true }, { skip: 5 }), 20);
    assert.equal(await coll.countDocuments({ odd: true }, { skip: 5, limit: 10 }), 10);
    assert.equal(await coll.countDocuments({ odd: true }, { skip: 20, limit: 10 }), 5);
    assert.equal(await coll.countDocuments({ odd: true }, { skip: 30 }), 0);
    assert.equal(await coll.countDocuments({ _id: { $gte: 45 } }, { limit: 3 }), 3);
    assert.equal(await coll.countDocuments({ missing: 1 }), 0);
    assert.equal(await coll.estimatedDocumentCount(), 50);
    assert.equal(await main.db(DB).collection('no_such_collection').countDocuments(), 0);
  });

  it('distinct: values once each, array elements unwound, with a filter', T, async () => {
    const coll = main.db(DB).collection('distincts');
    await coll.insertMany([
      { _id: 1, color: 'red', tags: ['a', 'b'], size: 1 },
      { _id: 2, color: 'blue', tags: ['b', 'c'], size: new Double(1) },
      { _id: 3, color: 'red', tags: 'd', size: 2 },
      { _id: 4, color: 'green' },
    ]);
    const sorted = (xs) => [...xs].sort();
    assert.deepEqual(sorted(await coll.distinct('color')), ['blue', 'green', 'red']);
    assert.deepEqual(sorted(await coll.distinct('tags')), ['a', 'b', 'c', 'd']);
    assert.deepEqual(sorted(await coll.distinct('tags', { color: 'red' })), ['a', 'b', 'd']);
    assert.deepEqual(sorted(await coll.distinct('size')), [1, 2]);
    assert.deepEqual(await coll.distinct('nothing'), []);
  });

  it('aggregate: $group, $lookup, and a cursor paged with batchSize', T, async () => {
    const db = main.db(DB);
    const tasks = db.collection('agg_tasks');
    const agents = db.collection('agg_agents');
    await tasks.insertMany([
      { _id: 1, owner: 'ana', hours: 3 }, { _id: 2, owner: 'bo', hours: 1 },
      { _id: 3, owner: 'ana', hours: 2 }, { _id: 4, owner: 'cy', hours: 4 }, { _id: 5, owner: 'bo', hours: 5 },
    ]);
    await agents.insertMany([{ _id: 'ana', team: 'red' }, { _id: 'bo', team: 'blue' }]);

    const grouped = await tasks.aggregate([
      { $group: { _id: '$owner', total: { $sum: '$hours' }, n: { $sum: 1 }, maxH: { $max: '$hours' } } },
      { $sort: { _id: 1 } },
    ]).toArray();
    assert.deepEqual(grouped, [
      { _id: 'ana', total: 5, n: 2, maxH: 3 },
      { _id: 'bo', total: 6, n: 2, maxH: 5 },
      { _id: 'cy', total: 4, n: 1, maxH: 4 },
    ]);

    const joined = await tasks.aggregate([
      { $match: { hours: { $gte: 2 } } },
      { $lookup: { from: 'agg_agents', localField: 'owner', foreignField: '_id', as: 'agent' } },
      { $project: { _id: 1, team: '$agent.team' } },
      { $sort: { _id: 1 } },
    ]).toArray();
    assert.deepEqual(joined, [
      { _id: 1, team: ['red'] }, { _id: 3, team: ['red'] }, { _id: 4, team: [] }, { _id: 5, team: ['blue'] },
    ]);

    const from = main.events.length;
    const ids = (await tasks.aggregate([{ $sort: { _id: -1 } }, { $project: { _id: 1 } }], { batchSize: 2 })
      .toArray()).map((d) => d._id);
    assert.deepEqual(ids, [5, 4, 3, 2, 1]);
    const agg = main.events.slice(from).find((e) => e.kind === 'succeeded' && e.name === 'aggregate');
    assert.equal(agg.reply.cursor.firstBatch.length, 2);
    assert.ok(main.events.slice(from).some((e) => e.kind === 'succeeded' && e.name === 'getMore'));

    const counted = await tasks.aggregate([{ $match: { owner: 'ana' } }, { $count: 'n' }]).toArray();
    assert.deepEqual(counted, [{ n: 2 }]);
  });

  it('createIndex, listIndexes, explain shows IXSCAN for an indexed query and COLLSCAN without, dropIndex', T, async () => {
    const coll = main.db(DB).collection('indexed');
    await coll.insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, x: i, y: i % 10 })));
    assert.equal(await coll.createIndex({ x: 1 }), 'x_1');
    assert.equal(await coll.createIndex({ y: 1, x: -1 }, { name: 'y_x' }), 'y_x');
    const names = (await coll.listIndexes().toArray()).map((i) => i.name).sort();
    assert.deepEqual(names, ['_id_', 'x_1', 'y_x']);
    const xIndex = (await coll.listIndexes().toArray()).find((i) => i.name === 'x_1');
    assert.deepEqual(xIndex.key, { x: 1 });

    const planned = await coll.find({ x: 42 }).explain('queryPlanner');
    const stages = stagesOf(planned.queryPlanner.winningPlan);
    assert.ok(stages.includes('IXSCAN'), `winning plan stages: ${stages}`);
    assert.ok(!stages.includes('COLLSCAN'), `winning plan stages: ${stages}`);

    const executed = await coll.find({ x: 42 }).explain('executionStats');
    assert.equal(executed.executionStats.nReturned, 1);
    assert.equal(executed.executionStats.totalDocsExamined, 1);
    assert.ok(executed.executionStats.totalKeysExamined >= 1);

    const unindexed = await coll.find({ z: 1 }).explain('queryPlanner');
    assert.ok(stagesOf(unindexed.queryPlanner.winningPlan).includes('COLLSCAN'));

    assert.deepEqual(await coll.find({ x: { $gte: 97 } }, { sort: { x: 1 } }).toArray(), [
      { _id: 97, x: 97, y: 7, version: 0 }, { _id: 98, x: 98, y: 8, version: 0 }, { _id: 99, x: 99, y: 9, version: 0 },
    ]);

    await coll.dropIndex('x_1');
    assert.deepEqual((await coll.listIndexes().toArray()).map((i) => i.name).sort(), ['_id_', 'y_x']);
    const after = await coll.find({ x: 42 }).explain('queryPlanner');
    assert.ok(stagesOf(after.queryPlanner.winningPlan).includes('COLLSCAN'));
    await rejectsWithCode(coll.dropIndex('_id_'), 72, 'InvalidOptions');
  });

  it('a unique index refuses a duplicate with DuplicateKey 11000, keyPattern and keyValue', T, async () => {
    const coll = main.db(DB).collection('unique_idx');
    assert.equal(await coll.createIndex({ email: 1 }, { unique: true }), 'email_1');
    await coll.insertOne({ _id: 1, email: 'ana@example.test' });
    const err = await rejectsWithCode(coll.insertOne({ _id: 2, email: 'ana@example.test' }), 11000);
    assert.deepEqual(err.keyPattern, { email: 1 });
    assert.deepEqual(err.keyValue, { email: 'ana@example.test' });
    assert.match(err.message, /E11000 duplicate key error/);

    // The same through _id, and an update that would make a duplicate.
    const idErr = await rejectsWithCode(coll.insertOne({ _id: 1, email: 'other@example.test' }), 11000);
    assert.deepEqual(idErr.keyPattern, { _id: 1 });
    assert.deepEqual(idErr.keyValue, { _id: 1 });
    await coll.insertOne({ _id: 3, email: 'bo@example.test' });
    await rejectsWithCode(coll.updateOne({ _id: 3 }, { $set: { email: 'ana@example.test' } }), 11000);
    assert.deepEqual(await coll.findOne({ _id: 3 }), { _id: 3, email: 'bo@example.test', version: 0 });

    // Ordered insertMany stops at the duplicate.
    let bulk = null;
    try {
      await coll.insertMany([{ _id: 10, email: 'x@example.test' }, { _id: 11, email: 'x@example.test' },
        { _id: 12, email: 'y@example.test' }]);
    } catch (e) {
      bulk = e;
    }
    assert.ok(bulk instanceof MongoBulkWriteError, `expected MongoBulkWriteError, got ${bulk}`);
    assert.equal(bulk.code, 11000);
    assert.equal(bulk.writeErrors[0].index, 1);
    assert.equal(bulk.result.insertedCount, 1);
    assert.equal(await coll.countDocuments({ _id: { $in: [10, 11, 12] } }), 1);
  });

  // Session A reads X inside its transaction, then (first attempt only)
  // another writer commits a change to X, then A writes X: A's snapshot is
  // older than X's last commit, so A's write is a WriteConflict (112) with
  // the label TransientTransactionError, and withTransaction runs the
  // callback again on a fresh snapshot. Reading n and writing n + 1 makes a
  // missed conflict visible as a lost update.
  async function conflictRetry(collName, otherWrite) {
    const coll = main.db(DB).collection(collName);
    await coll.insertOne({ _id: 'X', n: 0 });
    const other = await connect(server.uri());
    const otherColl = other.db(DB).collection(collName);
    const session = main.startSession();
    const errors = [];
    let attempts = 0;
    try {
      await session.withTransaction(async (s) => {
        attempts += 1;
        if (attempts > 5) throw new Error('withTransaction kept retrying');
        const x = await coll.findOne({ _id: 'X' }, { session: s });
        if (attempts === 1) await otherWrite(other, otherColl);
        try {
          await coll.updateOne({ _id: 'X' }, { $set: { n: x.n + 1 } }, { session: s });
        } catch (e) {
          errors.push(e);
          throw e;
        }
      });
    } finally {
      await session.endSession();
    }
    assert.ok(attempts >= 2, `the callback ran ${attempts} time(s); expected a retry after the conflict`);
    assert.ok(errors.length >= 1, 'the first attempt\'s write failed');
    assert.ok(errors[0] instanceof MongoServerError, `${errors[0]}`);
    assert.equal(errors[0].code, 112, errors[0].message);
    assert.equal(errors[0].codeName, 'WriteConflict');
    assert.ok(errors[0].hasErrorLabel('TransientTransactionError'), `labels: ${errors[0].errorLabels}`);
    // Other's +10, then A's retry on top of it: no lost update.
    assert.deepEqual(await coll.findOne({ _id: 'X' }), { _id: 'X', n: 11, version: 2 });
  }

  it('withTransaction retries when another session\'s transaction commits a write to the same document', T, async () => {
    await conflictRetry('txn_retry_txn', async (other, otherColl) => {
      const sb = other.startSession();
      try {
        await sb.withTransaction(async (s) => {
          await otherColl.updateOne({ _id: 'X' }, { $inc: { n: 10 } }, { session: s });
        });
      } finally {
        await sb.endSession();
      }
    });
  });

  it('withTransaction retries when a plain write from another client changes the same document', T, async () => {
    await conflictRetry('txn_retry_plain', async (other, otherColl) => {
      const r = await otherColl.updateOne({ _id: 'X' }, { $inc: { n: 10 } });
      assert.equal(r.modifiedCount, 1);
    });
  });

  it('a transaction writing a document another open transaction wrote gets WriteConflict; the first commits', T, async () => {
    const coll = main.db(DB).collection('txn_locked');
    await coll.insertOne({ _id: 'Y', n: 0 });
    const other = await connect(server.uri());
    const otherColl = other.db(DB).collection('txn_locked');
    const sa = main.startSession();
    const sb = other.startSession();
    try {
      sa.startTransaction();
      await coll.updateOne({ _id: 'Y' }, { $set: { n: 1 } }, { session: sa });
      sb.startTransaction();
      const err = await rejectsWithCode(otherColl.updateOne({ _id: 'Y' }, { $set: { n: 2 } }, { session: sb }),
        112, 'WriteConflict');
      assert.ok(err.hasErrorLabel('TransientTransactionError'), `labels: ${err.errorLabels}`);
      await sb.abortTransaction();
      // Not visible outside the transaction before it commits.
      assert.deepEqual(await coll.findOne({ _id: 'Y' }), { _id: 'Y', n: 0, version: 0 });
      await sa.commitTransaction();
    } finally {
      await sa.endSession();
      await sb.endSession();
    }
    assert.deepEqual(await coll.findOne({ _id: 'Y' }), { _id: 'Y', n: 1, version: 1 });
  });

  it('a transaction sees its own writes; abortTransaction discards them, commitTransaction publishes them', T, async () => {
    const coll = main.db(DB).collection('txn_abort');
    await coll.insertOne({ _id: 'keep', n: 0 });
    const s = main.startSession();
    try {
      s.startTransaction();
      await coll.insertOne({ _id: 'temp' }, { session: s });
      await coll.updateOne({ _id: 'keep' }, { $set: { n: 5 } }, { session: s });
      assert.deepEqual(await coll.find({}, { session: s, sort: { _id: 1 } }).toArray(),
        [{ _id: 'keep', n: 5, version: 1 }, { _id: 'temp', version: 0 }]);
      assert.deepEqual(await coll.find({}).toArray(), [{ _id: 'keep', n: 0, version: 0 }]);
      await s.abortTransaction();
      assert.deepEqual(await coll.find({}).toArray(), [{ _id: 'keep', n: 0, version: 0 }]);

      s.startTransaction();
      await coll.insertOne({ _id: 'temp2' }, { session: s });
      await coll.updateOne({ _id: 'keep' }, { $inc: { n: 2 } }, { session: s });
      await s.commitTransaction();
    } finally {
      await s.endSession();
    }
    assert.deepEqual(await coll.find({}, { sort: { _id: 1 } }).toArray(),
      [{ _id: 'keep', n: 2, version: 1 }, { _id: 'temp2', version: 0 }]);
  });

  it('a write whose reply is lost is retried by the driver with the same lsid and txnNumber, and applied once', T, async () => {
    const proxy = new ReplyDroppingProxy(server.port);
    await proxy.listen();
    let c = null;
    try {
      // directConnection: with replicaSet= the driver would go to the
      // advertised host (the server itself) instead of the proxy.
      c = await connect(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`,
        { heartbeatFrequencyMS: 500 });
      const coll = c.db(DB).collection('retried');
      const direct = main.db(DB).collection('retried');

      const sameRetry = (name) => {
        const reqs = proxy.requestsNamed(name);
        assert.equal(reqs.length, 2, `${name} sent ${reqs.length} time(s), expected the first try and one retry`);
        assert.ok(reqs[0].lsid !== null && reqs[0].txnNumber !== null, `${name} carries lsid and txnNumber`);
        assert.equal(reqs[1].lsid, reqs[0].lsid);
        assert.equal(reqs[1].txnNumber, reqs[0].txnNumber);
        assert.notEqual(reqs[1].conn, reqs[0].conn, 'the retry went on a new connection');
      };

      proxy.arm('insert');
      const ins = await coll.insertOne({ _id: 'once', n: 0 });
      assert.deepEqual(proxy.dropped, ['insert']);
      assert.deepEqual({ ...ins }, { acknowledged: true, insertedId: 'once' });
      sameRetry('insert');
      assert.deepEqual(await direct.find().toArray(), [{ _id: 'once', n: 0, version: 0 }]);

      proxy.arm('update');
      const upd = await coll.updateOne({ _id: 'once' }, { $inc: { n: 1 } });
      assert.deepEqual(proxy.dropped, ['insert', 'update']);
      assert.deepEqual({ ...upd },
        { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null });
      sameRetry('update');
      assert.deepEqual(await direct.find().toArray(), [{ _id: 'once', n: 1, version: 1 }]);

      proxy.arm('findAndModify');
      const fam = await coll.findOneAndUpdate({ _id: 'once' }, { $inc: { n: 1 } }, { returnDocument: 'after' });
      assert.deepEqual(proxy.dropped, ['insert', 'update', 'findAndModify']);
      assert.deepEqual(fam, { _id: 'once', n: 2, version: 2 });
      sameRetry('findAndModify');
      assert.deepEqual(await direct.find().toArray(), [{ _id: 'once', n: 2, version: 2 }]);

      await direct.insertOne({ _id: 'gone' });
      proxy.arm('delete');
      const del = await coll.deleteOne({ _id: 'gone' });
      assert.deepEqual(proxy.dropped, ['insert', 'update', 'findAndModify', 'delete']);
      assert.deepEqual({ ...del }, { acknowledged: true, deletedCount: 1 });
      sameRetry('delete');
      assert.deepEqual(await direct.find().toArray(), [{ _id: 'once', n: 2, version: 2 }]);
    } finally {
      if (c) await c.close().catch(() => {});
      await proxy.close();
    }
  });

  it('a commitTransaction whose reply is lost is retried by the driver and commits once', T, async () => {
    const proxy = new ReplyDroppingProxy(server.port);
    await proxy.listen();
    let c = null;
    try {
      c = await connect(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`,
        { heartbeatFrequencyMS: 500 });
      const coll = c.db(DB).collection('commit_retry');
      const direct = main.db(DB).collection('commit_retry');
      await direct.insertOne({ _id: 'k', n: 0 });
      const session = c.startSession();
      let attempts = 0;
      try {
        proxy.arm('commitTransaction');
        await session.withTransaction(async (s) => {
          attempts += 1;
          if (attempts > 3) throw new Error('withTransaction kept retrying');
          await coll.updateOne({ _id: 'k' }, { $inc: { n: 1 } }, { session: s });
        });
      } finally {
        await session.endSession();
      }
      assert.deepEqual(proxy.dropped, ['commitTransaction']);
      // The driver retries only the commit (UnknownTransactionCommitResult),
      // never the callback: a committed transaction commits again as ok.
      assert.equal(attempts, 1, 'the callback ran again: the retried commit was not answered ok');
      const commits = proxy.requestsNamed('commitTransaction');
      assert.ok(commits.length >= 2, `commitTransaction sent ${commits.length} time(s)`);
      for (const r of commits) {
        assert.equal(r.lsid, commits[0].lsid);
        assert.equal(r.txnNumber, commits[0].txnNumber);
      }
      assert.deepEqual(await direct.findOne({ _id: 'k' }), { _id: 'k', n: 1, version: 1 });
    } finally {
      if (c) await c.close().catch(() => {});
      await proxy.close();
    }
  });

  it('large documents: the driver splits an insertMany past maxMessageSizeBytes; reply batches stay within 16 MiB', T, async () => {
    const coll = main.db(DB).collection('large_docs');
    const pad = 'x'.repeat(1 << 20);
    const from = main.events.length;
    const res = await coll.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, pad })));
    assert.equal(res.insertedCount, 60);
    const inserts = main.events.slice(from).filter((e) => e.kind === 'succeeded' && e.name === 'insert');
    assert.ok(inserts.length >= 2, `60 MiB went in ${inserts.length} insert message(s)`);
    assert.equal(inserts.reduce((a, e) => a + e.reply.n, 0), 60);

    // A document just under the 16 MiB limit goes in and comes back whole.
    const big = 'y'.repeat(16 * 1024 * 1024 - 200);
    await coll.insertOne({ _id: 'big', big });
    const back = await coll.findOne({ _id: 'big' });
    assert.equal(back.big.length, big.length);

    const mark = main.events.length;
    let n = 0;
    for await (const doc of coll.find({ _id: { $type: 'number' } })) {
      assert.equal(doc.pad.length, pad.length);
      n += 1;
    }
    assert.equal(n, 60);
    const batches = main.events.slice(mark).filter((e) => e.kind === 'succeeded' &&
      (e.name === 'find' || e.name === 'getMore'));
    assert.ok(batches.length >= 4, `60 MiB came back in ${batches.length} batch(es)`);
    for (const b of batches) {
      const docs = b.reply.cursor.firstBatch ?? b.reply.cursor.nextBatch;
      const bytes = docs.reduce((a, d) => a + BSON.calculateObjectSize(d), 0);
      assert.ok(bytes <= 16 * 1024 * 1024 + 16 * 1024, `a batch of ${bytes} bytes`);
    }
  });

  it('concurrent writes from several clients and pooled connections lose no update', T, async () => {
    const coll = main.db(DB).collection('concurrent');
    await coll.insertOne({ _id: 'ctr', n: 0 });
    const others = await Promise.all([1, 2, 3].map(() => connect(server.uri('direct'), { maxPoolSize: 20 })));
    const colls = [coll, ...others.map((c) => c.db(DB).collection('concurrent'))];
    const ops = [];
    for (let i = 0; i < 200; i++) {
      const c = colls[i % colls.length];
      ops.push(c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } }));
      ops.push(c.insertOne({ _id: `doc-${i}`, i }));
    }
    const results = await Promise.all(ops);
    for (let i = 0; i < results.length; i += 2) assert.equal(results[i].modifiedCount, 1);
    assert.deepEqual(await coll.findOne({ _id: 'ctr' }), { _id: 'ctr', n: 200, version: 200 });
    assert.equal(await coll.countDocuments({ i: { $gte: 0 } }), 200);
  });

  it('runCommand: basisVersion (fresh goes through, stale is VersionConflict), writeContext, replay, and the journal', T, async () => {
    const db = main.db(DB);
    const coll = db.collection('gated');
    await coll.insertOne({ _id: 'o1', status: 'open' });
    const update = (basis, status, writeContext) => ({
      update: 'gated',
      updates: [{ q: { _id: 'o1' }, u: { $set: { status } }, basisVersion: basis }],
      writeContext,
    });
    const ctxA = { agentId: 'agent-a', taskId: 'task-gated-a', writeSeq: 1, source: 'client-test' };

    const fresh = await db.command(update(0, 'paid', ctxA));
    assert.equal(fresh.ok, 1);
    assert.equal(fresh.n, 1);
    assert.equal(fresh.nModified, 1);
    assert.equal(fresh.writeErrors, undefined);
    assert.deepEqual(await coll.findOne({ _id: 'o1' }), { _id: 'o1', status: 'paid', version: 1 });

    // The same idempotency key and command: the stored reply, nothing applied again.
    const again = await db.command(update(0, 'paid', ctxA));
    assert.equal(again.ok, 1);
    assert.equal(again.replayed, true);
    assert.equal(again.n, 1);
    assert.equal(again.nModified, 1);
    assert.deepEqual(await coll.findOne({ _id: 'o1' }), { _id: 'o1', status: 'paid', version: 1 });

    // A stale basis from another agent is refused with everything needed to decide.
    const stale = await db.command(update(0, 'void', { agentId: 'agent-b', taskId: 'task-gated-b', writeSeq: 1 }));
    assert.equal(stale.ok, 1);
    assert.equal(stale.n, 0);
    assert.equal(stale.nModified, 0);
    assert.equal(stale.writeErrors.length, 1);
    const we = stale.writeErrors[0];
    assert.equal(we.index, 0);
    assert.equal(we.codeName, 'VersionConflict');
    assert.equal(we.code, 80001);
    assert.equal(typeof we.errmsg, 'string');
    assert.equal(we.errInfo.basisVersion, 0);
    assert.equal(we.errInfo.currentVersion, 1);
    assert.deepEqual(we.errInfo.current, { _id: 'o1', status: 'paid', version: 1 });
    assert.equal(we.errInfo.lastWriter.agentId, 'agent-a');
    assert.equal(we.errInfo.suggestedAction, 'reread_and_retry');
    assert.deepEqual(await coll.findOne({ _id: 'o1' }), { _id: 'o1', status: 'paid', version: 1 });

    // A fresh basis from a third agent goes through.
    const next = await db.command(update(1, 'shipped', { agentId: 'agent-c' }));
    assert.equal(next.ok, 1);
    assert.equal(next.n, 1);
    assert.equal(next.nModified, 1);
    assert.equal(next.writeErrors, undefined);
    assert.deepEqual(await coll.findOne({ _id: 'o1' }), { _id: 'o1', status: 'shipped', version: 2 });

    const j = await db.command({ journal: 'gated', afterSeq: 0 });
    assert.equal(j.ok, 1);
    assert.ok(Array.isArray(j.events));
    const seqs = j.events.map((e) => Number(e.seq));
    for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i] > seqs[i - 1], `seqs in order: ${seqs}`);
    for (const e of j.events) assert.equal(e.ns, `${DB}.gated`);
    const byOp = (op) => j.events.filter((e) => e.op === op && e._id === 'o1');
    assert.equal(byOp('insert').length, 1);
    assert.equal(byOp('insert')[0].versionAfter, 0);
    const updates = byOp('update');
    assert.equal(updates.length, 2, 'the replay wrote no event');
    assert.equal(updates[0].versionBefore, 0);
    assert.equal(updates[0].versionAfter, 1);
    assert.equal(updates[0].writeContext.agentId, 'agent-a');
    assert.equal(updates[0].writeContext.taskId, 'task-gated-a');
    assert.equal(updates[1].writeContext.agentId, 'agent-c');
    assert.deepEqual(updates[0].changedPaths, ['status']);
    const conflicts = byOp('conflict');
    assert.equal(conflicts.length, 1);
    assert.equal(conflicts[0].writeContext.agentId, 'agent-b');
    assert.ok(Number(j.lastSeq) >= Math.max(...seqs));
  });

  it('an unknown command is CommandNotFound (59), and so is atlasVersion', T, async () => {
    const err = await rejectsWithCode(main.db(DB).command({ noSuchCommandForGatedb: 1 }), 59, 'CommandNotFound');
    assert.match(err.message, /noSuchCommandForGatedb/);
    await rejectsWithCode(main.db('admin').command({ atlasVersion: 1 }), 59, 'CommandNotFound');
    // The connection is still good.
    assert.equal((await main.db('admin').command({ ping: 1 })).ok, 1);
  });

  it('the administrative commands drivers and shells send', T, async () => {
    const admin = main.db('admin');
    const b = await admin.command({ buildInfo: 1 });
    assert.equal(b.ok, 1);
    assert.match(b.version, /^\d+\.\d+\.\d+/);
    assert.ok(Array.isArray(b.versionArray) && b.versionArray.length === 4);

    const s = await admin.command({ serverStatus: 1 });
    assert.equal(s.ok, 1);
    assert.ok(s.connections.current >= 1, 'serverStatus.connections.current');

    const p = await admin.command({ getParameter: 1, featureCompatibilityVersion: 1 });
    assert.equal(p.ok, 1);
    assert.equal(typeof p.featureCompatibilityVersion.version, 'string');

    const h = await admin.command({ hostInfo: 1 });
    assert.equal(h.ok, 1);
    assert.equal(typeof h.system, 'object');
    assert.equal(typeof h.os, 'object');

    const w = await admin.command({ whatsmyuri: 1 });
    assert.equal(w.ok, 1);
    assert.match(w.you, /^127\.0\.0\.1:\d+$/);

    const cs = await admin.command({ connectionStatus: 1 });
    assert.equal(cs.ok, 1);
    assert.deepEqual(cs.authInfo.authenticatedUsers, []);

    const l = await admin.command({ getLog: 'startupWarnings' });
    assert.equal(l.ok, 1);
    assert.ok(Array.isArray(l.log));
    assert.equal(typeof l.totalLinesWritten, 'number');

    const o = await admin.command({ getCmdLineOpts: 1 });
    assert.equal(o.ok, 1);
    assert.ok(Array.isArray(o.argv));
    assert.equal(typeof o.parsed, 'object');

    // create, listCollections, listDatabases, drop, dropDatabase.
    const db = main.db('clienttest_admin');
    await db.createCollection('made');
    await db.collection('implicit').insertOne({ _id: 1 });
    const colls = await db.listCollections().toArray();
    assert.deepEqual(colls.map((c) => c.name).sort(), ['implicit', 'made']);
    for (const c of colls) assert.equal(c.type, 'collection');
    const dbs = await main.db('admin').admin().listDatabases();
    assert.ok(dbs.databases.some((d) => d.name === 'clienttest_admin'), JSON.stringify(dbs.databases));
    assert.equal(await db.collection('made').drop(), true);
    assert.deepEqual((await db.listCollections().toArray()).map((c) => c.name), ['implicit']);
    assert.equal(await db.dropDatabase(), true);
    assert.deepEqual(await db.listCollections().toArray(), []);
    const after = await main.db('admin').admin().listDatabases();
    assert.ok(!after.databases.some((d) => d.name === 'clienttest_admin'));

    // close() ends the client's sessions with endSessions.
    const c = await connect(server.uri('direct'));
    await c.db(DB).collection('sessions').insertOne({ _id: 1 });
    await c.close();
    const ended = c.events.filter((e) => e.name === 'endSessions');
    assert.ok(ended.some((e) => e.kind === 'started'), 'endSessions sent');
    assert.ok(ended.some((e) => e.kind === 'succeeded'), 'endSessions answered ok');
  });
  it('change streams: watch() on a collection sees every change in order, in MongoDB\'s shape', T, async () => {
    const coll = main.db(DB).collection('watched');
    await coll.insertOne({ _id: 0, seed: true }); // the collection exists before the stream opens
    const stream = coll.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 500 });
    // The stream is open (the aggregate answered) before anything changes.
    assert.equal(await stream.tryNext(), null);
    await coll.insertOne({ _id: 1, n: 1, tags: ['a'] });
    await coll.updateOne({ _id: 1 }, { $inc: { n: 1 }, $set: { 'sub.x': 1 } });
    await coll.replaceOne({ _id: 1 }, { n: 10 });
    await coll.deleteOne({ _id: 1 });
    const events = [];
    while (events.length < 4) events.push(await stream.next());
    assert.deepEqual(events.map((e) => e.operationType), ['insert', 'update', 'replace', 'delete']);
    for (const e of events) {
      assert.deepEqual(e.ns, { db: DB, coll: 'watched' });
      assert.deepEqual(e.documentKey, { _id: 1 });
      assert.equal(typeof e._id._data, 'string');
      assert.ok(e.wallTime instanceof Date);
    }
    assert.deepEqual(events[0].fullDocument, { _id: 1, n: 1, tags: ['a'], version: 0 });
    // sub did not exist: the new embedded document is one updated field, as MongoDB reports it.
    assert.deepEqual(events[1].updateDescription.updatedFields, { n: 2, sub: { x: 1 } });
    assert.deepEqual(events[1].updateDescription.removedFields, []);
    assert.equal(events[1].fullDocument, null, 'updateLookup of a document deleted since');
    assert.deepEqual(events[2].fullDocument, { _id: 1, n: 10, version: 2 });
    // gatedb's own fields.
    assert.equal(Number(events[1].versionBefore), 0);
    assert.equal(Number(events[1].versionAfter), 1);
    assert.equal(events[3].versionAfter, null);

    // Resuming after the update's token gives what followed it.
    const resumed = coll.watch([], { resumeAfter: events[1]._id });
    const next = await resumed.next();
    assert.equal(next.operationType, 'replace');
    assert.deepEqual(next._id, events[2]._id);
    await resumed.close();

    // A pipeline after $changeStream, and drop ending the stream.
    const onlyInserts = coll.watch([{ $match: { operationType: 'insert' } }, { $project: { 'fullDocument.n': 1 } }],
      { startAfter: events[3]._id });
    await coll.insertOne({ _id: 2, n: 2, other: 'x' });
    const ins = await onlyInserts.next();
    assert.deepEqual(ins.fullDocument, { n: 2 });
    await coll.drop();
    const inserted = await stream.next();
    assert.equal(inserted.operationType, 'insert'); // _id 2, then the drop and invalidate
    assert.equal((await stream.next()).operationType, 'drop');
    assert.equal((await stream.next()).operationType, 'invalidate');
    // The server closed the cursor with the invalidate (cursor id 0).
    assert.equal(await stream.hasNext(), false);
    await stream.close();
    await onlyInserts.close();
  });

  it('change streams on a database and on the deployment, and errors', T, async () => {
    const db = main.db('clienttest_watchdb');
    const dbStream = db.watch([], { maxAwaitTimeMS: 300 });
    const all = main.watch([{ $match: { 'ns.db': 'clienttest_watchdb' } }], { maxAwaitTimeMS: 300 });
    assert.equal(await dbStream.tryNext(), null);
    assert.equal(await all.tryNext(), null);
    await db.collection('a').insertOne({ _id: 'a1' });
    await db.collection('b').insertOne({ _id: 'b1' });
    for (const s of [dbStream, all]) {
      const one = await s.next();
      const two = await s.next();
      assert.deepEqual([one.ns.coll, two.ns.coll], ['a', 'b']);
      assert.deepEqual([one.documentKey._id, two.documentKey._id], ['a1', 'b1']);
    }
    await dbStream.close();
    await all.close();

    // Options gatedb cannot honour are refused by name; a stage a change
    // stream cannot run is IllegalOperation.
    const coll = db.collection('a');
    await rejectsWithCode(coll.watch([], { fullDocument: 'required' }).next(), 2, 'BadValue');
    await rejectsWithCode(coll.watch([{ $group: { _id: 1 } }]).next(), 20, 'IllegalOperation');
    await rejectsWithCode(coll.watch([], { resumeAfter: { _data: 'not-ours' } }).next(), 260, 'InvalidResumeToken');
  });

  it('waiting change streams hold no worker thread: other commands run meanwhile', T, async () => {
    const coll = main.db(DB).collection('manywatchers');
    await coll.insertOne({ _id: 0 });
    // More waiting streams than the server has workers (8), each waiting up
    // to 30 s per getMore.
    const streams = [];
    for (let i = 0; i < 12; i++) {
      const s = coll.watch([], { maxAwaitTimeMS: 30_000 });
      streams.push(s);
    }
    const waiting = streams.map((s) => s.next());
    // Give every stream time to send its getMore and start waiting.
    await new Promise((r) => setTimeout(r, 1500));
    const other = await connect(server.uri('direct'));
    let timer;
    const tooLate = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('a find waited behind the change streams')), 15_000);
    });
    const found = await Promise.race([other.db(DB).collection('manywatchers').findOne({ _id: 0 }), tooLate]);
    clearTimeout(timer);
    assert.deepEqual(found, { _id: 0, version: 0 });
    // One write wakes every waiting stream.
    await coll.insertOne({ _id: 1 });
    const got = await Promise.all(waiting);
    for (const e of got) assert.deepEqual(e.documentKey, { _id: 1 });
    for (const s of streams) await s.close();
  });
});

describe('gatedb serve over TLS with the Node.js driver', () => {
  let tlsServer;
  let cert;

  before(async () => {
    cert = await makeTlsCertificate();
    tlsServer = await startServer({ extraArgs: ['--tlsCertificateKeyFile', cert.pemFile] });
  });

  after(async () => {
    if (tlsServer) await tlsServer.stop();
    if (cert) await rm(cert.dir, { recursive: true, force: true });
  });

  it('tls=true with tlsCAFile: a round trip, through replicaSet=gatedb and directConnection=true', T, async () => {
    for (const form of ['replicaSet', 'direct']) {
      const client = await connect(tlsServer.uri(form, `tls=true&tlsCAFile=${encodeURIComponent(cert.certFile)}`));
      try {
        const coll = client.db(DB).collection(`tls_${form}`);
        await coll.insertOne({ _id: 1, secret: 'over TLS' });
        assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, secret: 'over TLS', version: 0 });
        const hello = await client.db('admin').command({ hello: 1 });
        assert.equal(hello.setName, 'gatedb');
      } finally {
        await client.close();
      }
    }
  });

  it('a client without TLS, or one that does not trust the certificate, cannot connect', T, async () => {
    const quick = { serverSelectionTimeoutMS: 2_000 };
    await assert.rejects(connect(tlsServer.uri('direct'), quick), { name: 'MongoServerSelectionError' });
    // Self-signed: not trusted without tlsCAFile.
    await assert.rejects(connect(tlsServer.uri('direct', 'tls=true'), quick),
      (e) => e.name === 'MongoServerSelectionError' && /self[- ]signed/i.test(e.message));
    // The server goes on.
    const client = await connect(tlsServer.uri('direct', `tls=true&tlsCAFile=${encodeURIComponent(cert.certFile)}`));
    assert.deepEqual(await client.db('admin').command({ ping: 1 }), { ok: 1 });
    await client.close();
  });
});
