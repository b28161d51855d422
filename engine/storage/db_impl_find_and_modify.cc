// DBImpl::FindAndModify: select one document (optionally by sort), then
// update or remove it atomically, returning the old or new version.
#include <algorithm>

#include "engine/projection/projection.h"
#include "engine/projection/sort.h"
#include "engine/query/matcher.h"
#include "engine/index/planner.h"
#include "engine/storage/db_impl.h"
#include "engine/storage/db_impl_internal.h"
#include "engine/storage/write_events.h"
#include "engine/update/update_driver.h"

namespace gatedb {

StatusOr<FindAndModifyResult> DBImpl::FindAndModifyWith(const FindAndModifyRequest& req,
                                                             const WriteOptionsInternal& w) {
  RETURN_IF_ERROR(ValidateNamespace(req.ns));
  if (req.remove && req.update) {
    return Status(ErrorCode::kFailedToParse, "Cannot specify both an update and remove=true");
  }
  if (!req.remove && !req.update) {
    return Status(ErrorCode::kFailedToParse, "Either an update or remove=true must be specified");
  }
  if (req.remove && req.return_new) {
    return Status(ErrorCode::kFailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document");
  }
  if (req.remove && req.upsert) {
    return Status(ErrorCode::kFailedToParse, "Cannot specify both upsert=true and remove=true");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<query::Matcher> matcher, query::Matcher::Parse(req.query.bson()));
  ASSIGN_OR_RETURN(std::unique_ptr<projection::Projection> proj, projection::Projection::Parse(req.fields.bson()));
  std::unique_ptr<projection::SortSpec> sort;
  if (!req.sort.empty()) {
    ASSIGN_OR_RETURN(sort, projection::SortSpec::Parse(req.sort.bson()));
  }

  FindAndModifyResult result;
  std::shared_ptr<Collection> coll = FindCollection(req.ns);
  std::unique_ptr<update::UpdateDriver> driver;
  if (req.update) {
    update::UpdateOptions uopts;
    if (coll) uopts.version_field = coll->opts()->version_field;
    ASSIGN_OR_RETURN(driver, update::UpdateDriver::Parse(req.update->bson(), uopts));
  }
  RETURN_IF_ERROR(CheckBasisUse(req.basis_version, false, req.upsert));
  if (!coll) {
    if (req.basis_version) {
      return MissingCollectionBasis(req.ns);
    }
    if (!req.upsert) return result;
    ASSIGN_OR_RETURN(coll, GetOrCreateCollection(req.ns));
  }
  ASSIGN_OR_RETURN(WriteGate gate, OpenGate(*coll, req.query.bson(), req.basis_version, false, req.upsert, w));
  ReaderLock drop(&coll->drop_mu);
  if (coll->dropped) return Status(ErrorCode::kWriteConflict, "collection dropped during findAndModify");

  auto project = [&](const Document& doc) {
    if (proj->is_identity()) return doc;
    bson_t* out = bson_new();
    proj->Apply(doc.bson(), out);
    return Document::Adopt(out);
  };

  std::optional<index::Hint> hint;
  if (req.hint) {
    ASSIGN_OR_RETURN(index::Hint h, index::ParseHint(req.hint->get()));
    hint = std::move(h);
  }
  RETURN_IF_ERROR(CatchUpIndexes(w.scope));
  for (int attempt = 0;; ++attempt) {
    std::string target;
    bool found = false;
    if (!sort) {
      std::vector<std::string> keys;
      RETURN_IF_ERROR(CandidateKeys(*coll, req.query.bson(), *matcher, 1, &keys,
                                    w.scope ? &w.scope->txn : nullptr, hint ? &*hint : nullptr));
      if (!keys.empty()) {
        target = keys[0];
        found = true;
      }
    } else {
      std::vector<std::pair<std::string, Document>> docs;
      RETURN_IF_ERROR(MatchingDocs(*coll, req.query.bson(), *matcher, &docs,
                                   w.scope ? &w.scope->txn : nullptr, hint ? &*hint : nullptr));
      if (!docs.empty()) {
        std::vector<projection::SortKey> sort_keys(docs.size());
        for (size_t i = 0; i < docs.size(); ++i) sort->ExtractKey(docs[i].second.bson(), &sort_keys[i]);
        size_t best = 0;
        for (size_t i = 1; i < docs.size(); ++i) {
          if (sort->CompareKeys(sort_keys[i], sort_keys[best]) < 0) best = i;
        }
        target = docs[best].first;
        found = true;
      }
    }

    if (!found) {
      if (gate.basis_version) {
        RETURN_IF_ERROR(BasisTargetMissing(*coll, req.query.bson(), gate, w));
        return result;
      }
      if (!req.upsert) {
        if (gate.idiom) {
          std::vector<VersionConflictEntry> ignored;
          DetectIdiomConflict(*coll, req.query.bson(), 0, w, &ignored);
        }
        return result;
      }
      WriteOutcome o;
      o.want_after = true;
      RETURN_IF_ERROR(UpsertDocument(*coll, req.query.bson(), *driver, w, &o));
      if (o.raced) {
        if (attempt < kMaxWriteRetries) continue;
        return Status(ErrorCode::kWriteConflict, "upsert kept racing with concurrent inserts");
      }
      result.n = 1;
      result.upserted_id = std::move(o.upserted_id);
      if (req.return_new) result.value = project(o.after);
      return result;
    }

    WriteOutcome o;
    o.want_before = true;
    o.want_after = req.return_new;
    if (req.remove) {
      RETURN_IF_ERROR(DeleteDocument(*coll, target, matcher.get(), w, gate, &o));
    } else {
      RETURN_IF_ERROR(UpdateDocument(*coll, target, matcher.get(), *driver, w, gate, &o));
    }
    if (!o.matched) {
      // It changed between selection and lock; select again.
      if (attempt < kMaxWriteRetries) continue;
      return Status(ErrorCode::kWriteConflict, "findAndModify target kept changing");
    }
    result.n = 1;
    result.updated_existing = !req.remove;
    result.value = project(req.return_new ? o.after : o.before);
    return result;
  }
}

}  // namespace gatedb
