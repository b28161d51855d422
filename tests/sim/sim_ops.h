// One agent operation (Op) as plain data, and the code that performs it
// against the store (ExecuteOp).  An Op is data, not a closure, so that the
// same operation can be sent again after a "lost reply", logged by a crash
// child and re-sent by the crash driver after a restart, and looked up when
// the journal names it.
//
// Every write names its operation in its writeContext, and so in its
// journal event:
//   unkeyed writes and transaction statements:  taskId "r<R>.a<A>.o<N>"
//   keyed writes and keyed commits:             taskId "r<R>.a<A>.t<N/16>", writeSeq N
// (round R, agent A, the agent's N-th operation of the round), which is how
// the checker maps every journal event back to the model.
#ifndef GATEDB_TESTS_SIM_SIM_OPS_H_
#define GATEDB_TESTS_SIM_SIM_OPS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "gatedb/db.h"
#include "tests/sim/sim_config.h"

namespace gatedb {
namespace sim {

enum class OpKind : uint8_t {
  kUpdate = 1,           // one document of a document collection
  kAuditInsert = 2,      // an entry in the appendOnly collection
  kAppendOnlyWrite = 3,  // an update or delete there: must be refused
  kTransfer = 4,         // transaction: accounts[from] -= amount, accounts[to] += amount
  kTxnPair = 5,          // transaction: tx_<agent> += 1 in two documents, plus an audit entry
};

// How many journal write events one committed operation of `kind` leaves.
int ExpectedEventsOf(OpKind kind, bool with_audit);

struct Op {
  OpKind kind = OpKind::kUpdate;
  int round = 0;
  int agent = 0;
  uint32_t n = 0;         // the agent's operation number within the round
  bool keyed = false;     // (taskId, writeSeq) on the write, or on the commit
  std::string source;     // writeContext.source
  int64_t read_at_ms = 0; // writeContext.readAt (0: none)
  int coll = -1, doc = -1;
  // kUpdate.  A direct gated write carries basisVersion = basis; a helper
  // write goes through Collection::WriteWithVersionGate (its own reads).
  bool gated = false;
  int64_t basis = 0;
  bool helper = false;
  int helper_max_attempts = 0;
  int64_t inc_own = 0;     // $inc c_<agent>
  int64_t inc_shared = 0;  // $inc shared
  bool set_own = false;    // $set s_<agent>: SetValue()
  bool set_owner = false;  // $set owner: OwnerValue()
  // kAppendOnlyWrite: 0 update, 1 gated update, 2 delete.
  int ao_mode = 0;
  // kAuditInsert: with _id "au.<key>" (else the store makes an ObjectId).
  bool explicit_id = false;
  // kTransfer.
  int from = -1, to = -1;
  int64_t amount = 0;
  bool lock_read = false;  // read the source balance with lock_documents
  // kTxnPair: (coll, doc) and (coll2, doc2).
  int coll2 = -1, doc2 = -1;
  bool with_audit = false;
  int64_t txn_think_us = 0;  // transactions: thinking with the transaction open

  uint64_t key() const { return MakeKey(round, agent, n); }
  static uint64_t MakeKey(int round, int agent, uint32_t n) {
    return (static_cast<uint64_t>(round) << 48) | (static_cast<uint64_t>(agent) << 32) | n;
  }
  std::string AgentId() const { return Layout::AgentId(agent); }
  std::string OpTaskId() const;
  std::string KeyedTaskId() const;
  // The writeContext of a single write (kUpdate, kAuditInsert,
  // kAppendOnlyWrite) and of a transaction's statements.
  WriteContext WriteCtx() const;
  WriteContext StatementCtx() const;
  // The idempotency key of a keyed commit.
  WriteContext CommitCtx() const;
  int64_t SetValue() const { return static_cast<int64_t>(key()); }
  std::string OwnerValue() const;
  bool is_txn() const { return kind == OpKind::kTransfer || kind == OpKind::kTxnPair; }
  // A write the store counts in conflictStats (gated).
  bool gated_write() const { return kind == OpKind::kUpdate && (gated || helper); }
  // Journal write events (not conflict events) when it commits.
  int ExpectedEvents() const { return ExpectedEventsOf(kind, with_audit); }
  std::string Serialize() const;
  static std::optional<Op> Parse(const std::string& text);
  std::string Describe(const Layout& layout) const;
};

// The operation a journal event's writeContext names, or nullopt.
std::optional<uint64_t> ParseOpKey(const std::string& task_id, std::optional<int64_t> write_seq);
std::string KeyString(uint64_t key);  // "r0.a1.o57"
std::string OwnerValueOf(uint64_t key);

enum class Outcome : uint8_t {
  kCommitted = 0,     // took effect now
  kReplayed,          // the key had run: the stored reply, nothing applied
  kConflict,          // refused by the gate (VersionConflict / StaleBasis)
  kLeaseHeld,         // another agent's lease
  kLockTimeout,       // WriteConflict: a lock wait ran out (nothing applied)
  kAppendOnlyRefused, // AppendOnlyCollection
  kKeyReuse,          // IdempotencyKeyReuse: the key ran another command
  kDeclined,          // transfer: the balance was too low (the agent's own decision)
  kTxnGaveUp,         // transaction: transient errors until the time bound
  kError,             // anything unexpected: a violation
};
const char* OutcomeName(Outcome o);

struct OpResult {
  Outcome outcome = Outcome::kError;
  int conflicts = 0;    // refused gated attempts in this execution (each a journal conflict event)
  int stale_basis = 0;  // of them, StaleBasis
  int attempts = 0;     // helper: reads+writes; transactions: runs of the body
  std::string error;    // kError: what happened
  bool applied() const { return outcome == Outcome::kCommitted; }
  std::string Serialize() const;
  static std::optional<OpResult> Parse(const std::string& text);
};

// Each document the operation read (the retry helper's rereads), for the
// agent's own online checks.
using ReadObserver = std::function<void(int coll, int doc, const Document& current)>;

// Performs the operation once.  Never aborts; a failure the simulation
// does not expect comes back as kError with the reason.
OpResult ExecuteOp(Database* db, const Layout& layout, const Op& op, bool sync, const ReadObserver& observer);

// Whether `o` is an acceptable answer to re-sending a keyed operation that
// already committed: the stored reply (a replay), for the retry helper an
// IdempotencyKeyReuse (it rereads, so its command names another basis),
// and for a transaction any way its body may stop before the commit.
bool ResendOutcomeOk(const Op& op, Outcome o);

// {_id: id}
Document IdFilter(const std::string& id);

}  // namespace sim
}  // namespace gatedb

#endif  // GATEDB_TESTS_SIM_SIM_OPS_H_
