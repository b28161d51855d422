// File: engine/storage/fingerprint.h
//
// "The same write" for the idempotency log: a 16-byte XXH3-128 fingerprint
// stored with each (taskId, writeSeq) record and compared on every retry.
//
// Format 2 (records with `fpv: 2`): the fingerprint of the engine request
// (InsertRequest, UpdateRequest, ...) that every door builds, so the typed
// API and the dispatcher agree without building command BSON.  Its
// canonical form streams, as self-delimiting elements (type byte, name,
// 0x00, value): a tag, the operation, the namespace, then the request's
// fields with every default explicit (ordered, upsert, multi, limit, new,
// remove, basisVersion present or not).  Filters (q, query) and
// projections (fields) have their top-level fields sorted (deeper order is
// meaningful: {a: {x: 1, y: 2}} is an exact-document equality); update
// documents made of operators have the operators sorted and the paths under
// each sorted (MongoDB applies them in path order); inserted documents,
// replacements and sort specifications are kept exactly: their order is
// part of what they mean.  The write context, write concern and session
// fields are not part of a request, so they never count.  Values are
// compared by bytes: 1 and 1.0 are different writes.
//
// Format 1 (records without `fpv`, written before format 2): the canonical
// form of the command BSON.  The first field (command name and target)
// stays first; the other top-level fields are sorted by name; writeContext,
// lsid, txnNumber, autocommit, startTransaction, writeConcern, comment,
// maxTimeMS, $clusterTime, read preferences and API-version fields are left
// out ($db stays); statements, filters and updates are ordered as above.
// A retry meeting a format-1 record is compared by its command's format-1
// fingerprint: the command itself when it came through the dispatcher, else
// the command the typed API used to send for it.
#ifndef GATEDB_ENGINE_STORAGE_FINGERPRINT_H_
#define GATEDB_ENGINE_STORAGE_FINGERPRINT_H_

#include <bson/bson.h>

#include <string>

#include "engine/storage/requests.h"

namespace gatedb {

// The format of the fingerprints RequestFingerprint returns.
constexpr int kFingerprintFormat = 2;

std::string RequestFingerprint(const InsertRequest& req);
std::string RequestFingerprint(const UpdateRequest& req);
std::string RequestFingerprint(const DeleteRequest& req);
std::string RequestFingerprint(const FindAndModifyRequest& req);
// An idempotent transaction commit.
std::string CommitFingerprint();

// Format 1, for records written before format 2.  "" when the request
// cannot have come from the typed API of that time (then only its command
// could match).
std::string LegacyFingerprint(const InsertRequest& req);
std::string LegacyFingerprint(const UpdateRequest& req);
std::string LegacyFingerprint(const DeleteRequest& req);
std::string LegacyFingerprint(const FindAndModifyRequest& req);
std::string LegacyCommitFingerprint();

// Format 1: the canonical form as a BSON document (for tests and debugging).
std::string CanonicalCommand(const bson_t* cmd);
// 16 bytes, big-endian high then low: XXH3-128 of the canonical form
// streamed without building it (each element's type, name and value bytes;
// a reordered container's fields then 0x00).  Equal exactly when the
// canonical forms are equal.
std::string CommandFingerprint(const bson_t* cmd);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_STORAGE_FINGERPRINT_H_
