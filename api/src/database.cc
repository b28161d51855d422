#include "gatedb/db.h"

#include "api/commands/command_dispatcher.h"
#include "engine/storage/db_impl.h"

namespace gatedb {

StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, const Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<DBImpl> impl, DBImpl::Open(path, options));
  std::unique_ptr<Database> db(new Database());
  db->impl_ = std::move(impl);
  db->dispatcher_ = std::make_unique<CommandDispatcher>(db->impl_.get());
  return db;
}

Database::~Database() = default;

Document Database::RunCommand(DocumentView command) { return dispatcher_->Run(command.bson()); }

Collection Database::GetCollection(std::string_view db, std::string_view name) {
  return Collection(this, std::string(db), std::string(name));
}

Status Database::CreateCollection(std::string_view db, std::string_view name,
                                  const CreateCollectionOptions& options) {
  CollectionOptions o;
  o.version_field = options.version_field;
  return impl_->CreateCollection(Namespace{std::string(db), std::string(name)}, o);
}

Status Database::DropCollection(std::string_view db, std::string_view name) {
  return impl_->DropCollection(Namespace{std::string(db), std::string(name)});
}

std::vector<std::string> Database::ListCollectionNames(std::string_view db) {
  std::vector<std::string> out;
  for (const CollectionInfo& info : impl_->ListCollections(std::string(db))) out.push_back(info.ns.coll);
  return out;
}

}  // namespace gatedb
