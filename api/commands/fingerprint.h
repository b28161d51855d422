// File: api/commands/fingerprint.h
//
// "The same command" for the idempotency log: XXH3-128 over a canonical form
// of the command that leaves out its write context and session fields and
// orders fields where MongoDB gives their order no meaning.
//
// Canonical form:
//   - the first field (command name and target) stays first; the other
//     top-level fields are sorted by name; writeContext, lsid, txnNumber,
//     autocommit, startTransaction, writeConcern, comment, maxTimeMS,
//     $clusterTime, read preferences and API-version fields are left out
//     ($db stays: another database is another command);
//   - each statement of `updates` / `deletes` has its fields sorted;
//   - filters (`q`, `query`) and projections (`fields`) have their top-level
//     fields sorted (deeper order is meaningful: {a: {x: 1, y: 2}} is an
//     exact-document equality);
//   - update documents made of operators have the operators sorted and the
//     paths under each operator sorted (MongoDB applies them in path order);
//   - inserted documents, replacements and sort specifications are kept
//     exactly: their order is part of what they mean.
// Values are compared by bytes: 1 and 1.0 are different commands.
#ifndef GATEDB_API_COMMANDS_FINGERPRINT_H_
#define GATEDB_API_COMMANDS_FINGERPRINT_H_

#include <bson/bson.h>

#include <string>

namespace gatedb {
namespace commands {

// The canonical form as a BSON document (for tests and debugging).
std::string CanonicalCommand(const bson_t* cmd);
// 16 bytes, big-endian high then low: XXH3-128 of the canonical form
// streamed without building it (each element's type, name and value bytes;
// a reordered container's fields then 0x00).  Equal exactly when the
// canonical forms are equal.
std::string CommandFingerprint(const bson_t* cmd);

}  // namespace commands
}  // namespace gatedb

#endif  // GATEDB_API_COMMANDS_FINGERPRINT_H_
