// File: engine/storage/write_reply.h
//
// The write results in MongoDB's reply shapes, both ways.  The command
// dispatcher answers with them, and a keyed write stores its reply in this
// shape in the idempotency log (records of every format hold it), so a
// retry through any door decodes the same result.
//
//   insert:        {n, insertedIds?, writeErrors?}
//   update:        {n, nModified, upserted?: [{index, _id}], writeErrors?,
//                   versionConflicts?: [{index, _id, expectedVersion, currentVersion}]}
//   delete:        {n, writeErrors?, versionConflicts?}
//   findAndModify: {lastErrorObject: {n, updatedExisting?, upserted?}, value}
//   writeErrors:   [{index, code, codeName, errmsg, errInfo?}]; a
//                  DuplicateKey entry holds keyPattern and keyValue itself,
//                  as MongoDB's does.
// Stored replies also end in `ok: 1`; decoding ignores fields it does not
// know.
#ifndef GATEDB_ENGINE_STORAGE_WRITE_REPLY_H_
#define GATEDB_ENGINE_STORAGE_WRITE_REPLY_H_

#include <bson/bson.h>

#include "engine/storage/requests.h"

namespace gatedb {

// `inserted_ids`: also list the inserted _ids (keyed inserts do, so that an
// agent retrying after a lost reply learns them from the replay).
void AppendReply(const InsertResult& r, bool inserted_ids, bson_t* out);
void AppendReply(const UpdateWriteResult& r, bson_t* out);
void AppendReply(const DeleteWriteResult& r, bson_t* out);
// `remove`: the request removed (then there is no updatedExisting).
void AppendReply(const FindAndModifyResult& r, bool remove, bson_t* out);

// An error's parts as every reply carries them (writeErrors entries and
// command error replies alike): `errmsg`, made valid UTF-8 (ToCleanUtf8:
// messages may quote a caller's bytes); the details as MongoDB places them,
// a DuplicateKey's keyPattern and keyValue beside errmsg, any other
// error's under `errInfo`.
void AppendErrorMessage(const Status& s, bson_t* out);
void AppendErrorDetails(const Status& s, bson_t* out);

// Errors: DataCorruptionDetected when `reply` is not a reply of that shape.
Status DecodeReply(const bson_t* reply, InsertResult* out);
Status DecodeReply(const bson_t* reply, UpdateWriteResult* out);
Status DecodeReply(const bson_t* reply, DeleteWriteResult* out);
Status DecodeReply(const bson_t* reply, FindAndModifyResult* out);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_WRITE_REPLY_H_
