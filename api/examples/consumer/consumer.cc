// An embedding program: opens a data directory, inserts a task, and has
// four threads claim work on it through the version gate; exits 0 only
// when no increment was lost and the version counted every write.
#include <gatedb/collection.h>
#include <gatedb/db.h>
#include <gatedb/document.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

gatedb::Document Json(const std::string& s) { return *gatedb::Document::FromJson(s); }

int Fail(const char* what, const gatedb::Status& s) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DATA_DIR\n");
    return 2;
  }
  auto db = gatedb::Database::Open(argv[1]);
  if (!db.ok()) return Fail("open", db.status());
  gatedb::Collection tasks = (*db)->GetCollection("app", "tasks");
  auto ins = tasks.InsertOne(Json(R"({"_id": "t1", "done": 0})").view());
  if (!ins.ok()) return Fail("insert", ins.status());

  constexpr int kThreads = 4, kEach = 50;
  std::vector<std::thread> threads;
  std::vector<gatedb::Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      gatedb::GatedWriteOptions options;
      options.max_attempts = 1000;
      options.context.agent_id = "worker-" + std::to_string(t);
      for (int i = 0; i < kEach; ++i) {
        auto r = tasks.WriteWithVersionGate(
            Json(R"({"_id": "t1"})").view(),
            [](const gatedb::Document&) -> gatedb::StatusOr<gatedb::Document> { return Json(R"({"$inc": {"done": 1}})"); },
            options);
        if (!r.ok()) {
          errors[t] = r.status();
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& e : errors) {
    if (!e.ok()) return Fail("gated write", e);
  }

  auto doc = tasks.FindOne(Json(R"({"_id": "t1"})").view());
  if (!doc.ok() || !*doc) return Fail("find", doc.ok() ? gatedb::Status(gatedb::ErrorCode::kNoSuchKey, "t1 is gone") : doc.status());
  const std::string want = R"({ "_id" : "t1", "done" : 200, "version" : 200 })";
  const std::string got = (*doc)->ToJson();
  std::printf("%s\n", got.c_str());
  if (got != want) {
    std::fprintf(stderr, "consumer: expected %s\n", want.c_str());
    return 1;
  }
  return 0;
}
