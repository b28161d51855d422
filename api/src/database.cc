#include "gatedb/db.h"

#include <chrono>
#include <random>
#include <thread>

#include "api/src/database_rep.h"
#include "engine/storage/idempotency.h"

namespace gatedb {

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, const Options& options) {
  if (options.transaction_lifetime_ms <= 0) {
    return Status(ErrorCode::kBadValue, "transaction_lifetime_ms must be positive");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<DBImpl> impl, DBImpl::Open(path, options));
  std::unique_ptr<Database> db(new Database());
  db->rep_->db = std::move(impl);
  db->rep_->txns = std::make_unique<TxnManager>(db->rep_->db.get());
  db->rep_->dispatcher = std::make_unique<CommandDispatcher>(db->rep_->db.get(), db->rep_->txns.get());
  db->rep_->unauthenticated_is_root = options.unauthenticated_is_root;
  if (!options.identity.empty()) {
    RETURN_IF_ERROR(db->rep_->Caller(options.identity).status());
    db->identity_ = options.identity;
  }
  return db;
}

Database::Database() : rep_(std::make_shared<Rep>()) {}

Database::~Database() = default;

StatusOr<std::unique_ptr<Database>> Database::As(const Identity& who) {
  if (who.empty()) return Status(ErrorCode::kBadValue, "Database::As needs a user name");
  RETURN_IF_ERROR(rep_->Caller(who).status());
  std::unique_ptr<Database> view(new Database());
  view->rep_ = rep_;
  view->identity_ = who;
  return view;
}

StatusOr<std::shared_ptr<const auth::Principal>> Database::Rep::Caller(const Identity& identity) const {
  if (identity.empty()) {
    if (unauthenticated_is_root) return std::shared_ptr<const auth::Principal>();
    return auth::Principal::Unauthenticated();
  }
  return db->ResolvePrincipal(identity.user, identity.db);
}

Status CheckLeaseCall(const auth::Principal& caller, const std::string& db, const std::string& coll,
                      const std::string& holder) {
  RETURN_IF_ERROR(caller.CheckNamespace(auth::Action::kUpdate, db, coll));
  if (holder != caller.user()) {
    return auth::UnauthorizedError(caller.user(), "update", db + "." + coll,
                                   "a lease is held in the caller's own name: \"" + holder + "\" is not the "
                                   "authenticated user \"" + caller.user() + "\"");
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<Transaction>> Database::StartTransaction(const TransactionOptions& options) {
  if (options.lifetime_ms <= 0) return Status(ErrorCode::kBadValue, "lifetime_ms must be positive");
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  return std::make_unique<Transaction>(rep_->txns->Begin(options, std::move(caller)));
}

Status Database::WithTransaction(const std::function<Status(Transaction& txn)>& fn,
                                 const WithTransactionOptions& options) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  std::mt19937 rng(std::random_device{}());
  if (options.commit_context) {
    // A re-run of a transaction that committed under this key (its reply was
    // lost, or it got WriteConcernFailed) replays instead of running again.
    bool committed = false;
    ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
    RETURN_IF_ERROR(rep_->txns->CommittedBefore(*options.commit_context, caller.get(),
                                                  options.transaction.sync || rep_->db->options().sync, &committed));
    if (committed) return Status::OK();
  }
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(std::unique_ptr<Transaction> txn, StartTransaction(options.transaction));
    Status s = fn(*txn);
    if (s.ok()) {
      s = options.commit_context ? txn->Commit(*options.commit_context) : txn->Commit();
      if (s.ok()) return s;
    } else {
      txn->Abort().PermitUnchecked();
    }
    if (!IsTransientTransactionError(s) || std::chrono::steady_clock::now() >= deadline) return s;
    // Backoff with jitter: 1, 2, 4, ... ms up to 100 ms.
    int64_t cap = std::min<int64_t>(100, int64_t{1} << std::min(attempt, 7));
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + rng() % cap));
  }
}

Document Database::RunCommand(DocumentView command) {
  StatusOr<std::shared_ptr<const auth::Principal>> caller = rep_->Caller(identity_);
  if (!caller.ok()) return CommandDispatcher::ErrorReplyFor(caller.status());
  return rep_->dispatcher->Run(command.bson(), nullptr, *caller);
}

Collection Database::GetCollection(std::string_view db, std::string_view name) {
  return Collection(this, std::string(db), std::string(name));
}

Status Database::CreateCollection(std::string_view db, std::string_view name,
                                  const CreateCollectionOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kCreateCollection, std::string(db), std::string(name)));
  CollectionOptions o;
  o.version_field = options.version_field;
  o.max_basis_age_ms = options.max_basis_age_ms;
  o.validator = options.validator;
  o.validation_level = options.validation_level;
  o.validation_action = options.validation_action;
  return rep_->db->CreateCollection(Namespace{std::string(db), std::string(name)}, o);
}

Status Database::DropCollection(std::string_view db, std::string_view name) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kDropCollection, std::string(db), std::string(name)));
  return rep_->db->DropCollection(Namespace{std::string(db), std::string(name)});
}

std::vector<std::string> Database::ListCollectionNames(std::string_view db) {
  auto caller = rep_->Caller(identity_);
  if (!caller.ok() || (*caller && !(*caller)->Can(auth::Action::kListCollections, auth::Target::Database(std::string(db))))) {
    return {};  // nothing the caller may list
  }
  std::vector<std::string> out;
  for (const CollectionInfo& info : rep_->db->ListCollections(std::string(db))) out.push_back(info.ns.coll);
  return out;
}

StatusOr<JournalBatch> Database::ReadJournal(const JournalQuery& query) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) RETURN_IF_ERROR((*caller).Check(auth::Action::kFind, auth::Target::Cluster(), "read the journal"));
  JournalReadRequest req;
  if (!query.collection.empty()) {
    Namespace ns{query.db.empty() ? "test" : query.db, query.collection};
    RETURN_IF_ERROR(ValidateNamespace(ns));
    req.ns = ns.full();
  } else {
    req.db = query.db;
  }
  req.after_seq = query.after_seq;
  req.limit = query.limit;
  ASSIGN_OR_RETURN(JournalReadResult r, rep_->db->ReadJournal(req));
  JournalBatch out;
  out.events = std::move(r.events);
  out.last_seq = r.last_seq;
  out.next_after_seq = r.next_after_seq;
  out.first_seq = r.first_seq;
  return out;
}

bool Database::WaitForJournal(uint64_t after_seq, int64_t timeout_ms) {
  return rep_->db->WaitForJournal(after_seq, timeout_ms);
}

StatusOr<std::vector<Database::StoredWrite>> Database::IdempotencyStatus(const std::string& task_id) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) RETURN_IF_ERROR((*caller).Check(auth::Action::kFind, auth::Target::Cluster(), "read the idempotency log"));
  ASSIGN_OR_RETURN(auto writes, rep_->db->IdempotencyStatus(task_id));
  std::vector<StoredWrite> out;
  for (auto& w : writes) out.push_back(StoredWrite{w.first, w.second.at_ms, w.second.ns, std::move(w.second.reply)});
  return out;
}

StatusOr<ConflictStats> Database::GetConflictStats(std::string_view db, std::string_view collection,
                                                   uint64_t after_seq) {
  ASSIGN_OR_RETURN(std::shared_ptr<const auth::Principal> caller, rep_->Caller(identity_));
  if (caller) RETURN_IF_ERROR(caller->CheckNamespace(auth::Action::kFind, std::string(db), std::string(collection)));
  ASSIGN_OR_RETURN(ConflictStatsResult r,
                   rep_->db->ConflictStats(Namespace{std::string(db), std::string(collection)}, after_seq));
  ConflictStats out;
  out.gated_writes = r.gated_writes;
  out.conflicts = r.conflicts;
  out.conflict_rate = r.conflict_rate;
  out.hot_documents = std::move(r.hot_documents);
  out.agents = std::move(r.agents);
  out.unauthorized = r.unauthorized;
  out.unauthorized_agents = std::move(r.unauthorized_agents);
  return out;
}

StatusOr<uint64_t> Database::CollectIdempotencyRecords() { return rep_->db->CollectIdempotencyRecords(); }

}  // namespace gatedb
