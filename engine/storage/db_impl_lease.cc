// DBImpl: document leases.  Column family "leases": key = the document's
// key in `docs`, value = BSON {holder, expiresAt: date, ns, _id}.  A lease
// is taken under the document's own lock (GetForUpdate on its docs key), so
// acquiring and writing serialize; a writer reads the lease inside its
// transaction, after locking the document.
#include "engine/document/validate.h"
#include "engine/keys/key_codec.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/util/rocks_status.h"

namespace gatedb {

namespace {

struct StoredLease {
  std::string holder;
  int64_t expires_at_ms = 0;
};

bool DecodeLease(const std::string& bytes, StoredLease* out) {
  bson_t b;
  if (!bson_init_static(&b, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) return false;
  bson_iter_t it;
  if (bson_iter_init_find(&it, &b, "holder") && BSON_ITER_HOLDS_UTF8(&it)) out->holder = bson_iter_utf8(&it, nullptr);
  if (bson_iter_init_find(&it, &b, "expiresAt") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
    out->expires_at_ms = bson_iter_date_time(&it);
  }
  return true;
}

Status LeaseHeld(const StoredLease& lease, const std::string& what) {
  bson_t* info = bson_new();
  BSON_APPEND_UTF8(info, "holder", lease.holder.c_str());
  BSON_APPEND_DATE_TIME(info, "expiresAt", lease.expires_at_ms);
  return Status(ErrorCode::kLeaseHeld, what + ": the document is leased by '" + lease.holder + "'",
                std::make_shared<const Document>(Document::Adopt(info)));
}

}  // namespace

Status DBImpl::CheckLease(Txn& txn, const std::string& doc_key, const WriteContext& ctx) {
  if (lease_records_.load(std::memory_order_relaxed) == 0) return Status::OK();
  std::string value;
  rocksdb::Status rs = txn->Get(rocksdb::ReadOptions(), leases_cf_, doc_key, &value);
  if (rs.IsNotFound()) return Status::OK();
  RETURN_IF_ERROR(FromRocks(rs));
  StoredLease lease;
  if (!DecodeLease(value, &lease)) return Status(ErrorCode::kDataCorruptionDetected, "bad lease record");
  if (lease.expires_at_ms <= NowMs() || lease.holder == ctx.agent_id) return Status::OK();
  return LeaseHeld(lease, "write refused");
}

StatusOr<LeaseInfo> DBImpl::LeaseCommand(LeaseOp op, const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                         const std::string& holder) {
  RETURN_IF_ERROR(ValidateNamespace(ns));
  RETURN_IF_ERROR(ValidateIdValue(id));
  if (holder.empty()) return Status(ErrorCode::kBadValue, "a lease needs writeContext.agentId (the holder)");
  if (op != LeaseOp::kRelease && (ttl_ms <= 0 || ttl_ms > 24LL * 3600 * 1000)) {
    return Status(ErrorCode::kBadValue, "ttlMs must be between 1 and 86400000");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Collection> coll, GetOrCreateCollection(ns));
  std::string key = keys::EncodeDocKey(coll->info.id, id);
  LeaseInfo out;
  RETURN_IF_ERROR(WithLockRetries(txn_pool_.get(), RocksWriteOptions(WriteOptionsInternal()), nullptr, [&](Txn& txn) -> Status {
    out = LeaseInfo();
    std::string ignored, value;
    bool doc_exists = false, exists = false;
    // The document's own lock serializes leases with its writers.
    RETURN_IF_ERROR(txn.GetForUpdate(docs_cf_, key, &ignored, &doc_exists));
    RETURN_IF_ERROR(txn.GetForUpdate(leases_cf_, key, &value, &exists));
    StoredLease lease;
    if (exists && !DecodeLease(value, &lease)) return Status(ErrorCode::kDataCorruptionDetected, "bad lease record");
    int64_t now = NowMs();
    bool live = exists && lease.expires_at_ms > now;
    if (live && lease.holder != holder) {
      return LeaseHeld(lease, op == LeaseOp::kAcquire ? "acquireLease refused" : "lease not yours");
    }
    if (op == LeaseOp::kRelease) {
      if (!exists) return Status::OK();
      RETURN_IF_ERROR(FromRocks(txn->Delete(leases_cf_, key)));
      RETURN_IF_ERROR(txn.Commit());
      --lease_records_;
      out.holder = lease.holder;
      out.expires_at_ms = lease.expires_at_ms;
      out.released = live;
      return Status::OK();
    }
    if (op == LeaseOp::kRenew && !live) {
      return Status(ErrorCode::kNoSuchKey, "no live lease of '" + holder + "' on this document to renew");
    }
    bson_t* b = bson_new();
    BSON_APPEND_UTF8(b, "holder", holder.c_str());
    BSON_APPEND_DATE_TIME(b, "expiresAt", now + ttl_ms);
    BSON_APPEND_UTF8(b, "ns", ns.full().c_str());
    BSON_APPEND_VALUE(b, "_id", &id);
    std::string bytes(reinterpret_cast<const char*>(bson_get_data(b)), b->len);
    bson_destroy(b);
    RETURN_IF_ERROR(FromRocks(txn->Put(leases_cf_, key, bytes)));
    // Counted before the commit releases the document's lock: a writer
    // waiting for that lock must not skip CheckLease's lookup (found by
    // gatedb_sim: writes slipped in right after a lease was granted).
    if (!exists) ++lease_records_;
    Status committed = txn.Commit();
    if (!committed.ok()) {
      if (!exists) --lease_records_;
      return committed;
    }
    out.holder = holder;
    out.expires_at_ms = now + ttl_ms;
    return Status::OK();
  }));
  return out;
}

StatusOr<LeaseInfo> DBImpl::AcquireLease(const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                         const std::string& holder) {
  return LeaseCommand(LeaseOp::kAcquire, ns, id, ttl_ms, holder);
}
StatusOr<LeaseInfo> DBImpl::RenewLease(const Namespace& ns, const bson_value_t& id, int64_t ttl_ms,
                                       const std::string& holder) {
  return LeaseCommand(LeaseOp::kRenew, ns, id, ttl_ms, holder);
}
StatusOr<LeaseInfo> DBImpl::ReleaseLease(const Namespace& ns, const bson_value_t& id, const std::string& holder) {
  return LeaseCommand(LeaseOp::kRelease, ns, id, 0, holder);
}

}  // namespace gatedb
