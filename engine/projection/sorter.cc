#include "engine/projection/sorter.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace gatedb {
namespace projection {

namespace {

// What a row costs besides its bytes (key values, vector slots, headers).
constexpr size_t kRowOverhead = 64;

std::atomic<uint64_t> g_run_counter{0};

Status IoError(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kInternalError, what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

struct Sorter::Row {
  SortKey key;
  uint64_t seq = 0;
  Document doc;
  std::string extra;
  size_t bytes() const { return doc.size() + extra.size() + kRowOverhead; }
};

// One sorted run on disk, read back one row at a time.
class Sorter::Run {
 public:
  Run(std::string path, std::FILE* f) : path_(std::move(path)), f_(f) {}
  ~Run() {
    if (f_ != nullptr) std::fclose(f_);
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

  Status Write(const Row& r) {
    uint32_t dn = static_cast<uint32_t>(r.doc.size());
    uint32_t en = static_cast<uint32_t>(r.extra.size());
    if (std::fwrite(&r.seq, sizeof r.seq, 1, f_) != 1 || std::fwrite(&dn, sizeof dn, 1, f_) != 1 ||
        (dn > 0 && std::fwrite(r.doc.data(), 1, dn, f_) != dn) || std::fwrite(&en, sizeof en, 1, f_) != 1 ||
        (en > 0 && std::fwrite(r.extra.data(), 1, en, f_) != en)) {
      return IoError("cannot write sort run", path_);
    }
    return Status::OK();
  }
  Status FinishWriting() {
    if (std::fflush(f_) != 0 || std::fseek(f_, 0, SEEK_SET) != 0) return IoError("cannot write sort run", path_);
    return Status::OK();
  }
  // Reads the next row into head(); false at the end.
  StatusOr<bool> Advance(const SortSpec& spec) {
    uint32_t dn = 0, en = 0;
    if (std::fread(&head_.seq, sizeof head_.seq, 1, f_) != 1) {
      if (std::feof(f_)) return false;
      return IoError("cannot read sort run", path_);
    }
    std::string buf;
    if (std::fread(&dn, sizeof dn, 1, f_) != 1) return Status(ErrorCode::kInternalError, "truncated sort run " + path_);
    buf.resize(dn);
    if (dn > 0 && std::fread(&buf[0], 1, dn, f_) != dn) {
      return Status(ErrorCode::kInternalError, "truncated sort run " + path_);
    }
    StatusOr<Document> doc = Document::FromBytes(reinterpret_cast<const uint8_t*>(buf.data()), buf.size());
    if (!doc.ok()) return Status(ErrorCode::kInternalError, "corrupt sort run " + path_);
    head_.doc = std::move(*doc);
    if (std::fread(&en, sizeof en, 1, f_) != 1) return Status(ErrorCode::kInternalError, "truncated sort run " + path_);
    head_.extra.resize(en);
    if (en > 0 && std::fread(&head_.extra[0], 1, en, f_) != en) {
      return Status(ErrorCode::kInternalError, "truncated sort run " + path_);
    }
    spec.ExtractKey(head_.doc.bson(), &head_.key);
    return true;
  }
  Row& head() { return head_; }

 private:
  std::string path_;
  std::FILE* f_;
  Row head_;
};

Sorter::Sorter(const SortSpec* spec, SorterOptions options)
    : spec_(spec), options_(std::move(options)), top_k_(options_.limit > 0) {}

Sorter::~Sorter() = default;

bool Sorter::RowLess(const Row& a, const Row& b) const {
  int c = spec_->CompareKeys(a.key, b.key);
  if (c != 0) return c < 0;
  return a.seq < b.seq;
}

Status Sorter::Add(Document doc, std::string extra) {
  Row row;
  spec_->ExtractKey(doc.bson(), &row.key);
  row.seq = next_seq_++;
  row.doc = std::move(doc);
  row.extra = std::move(extra);
  auto less = [this](const Row& a, const Row& b) { return RowLess(a, b); };
  if (top_k_) {
    // A max-heap of the best `limit` rows: the worst kept row on top.
    if (rows_.size() == static_cast<size_t>(options_.limit)) {
      if (!RowLess(row, rows_.front())) return Status::OK();
      std::pop_heap(rows_.begin(), rows_.end(), less);
      memory_ -= rows_.back().bytes();
      rows_.pop_back();
    }
    memory_ += row.bytes();
    rows_.push_back(std::move(row));
    std::push_heap(rows_.begin(), rows_.end(), less);
  } else {
    memory_ += row.bytes();
    rows_.push_back(std::move(row));
  }
  if (memory_ <= options_.max_memory_bytes) return Status::OK();
  if (!options_.allow_disk_use) {
    return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed,
                  "Sort exceeded memory limit of " + std::to_string(options_.max_memory_bytes) +
                      " bytes, but did not opt in to external sorting.");
  }
  // Spilling ends top-k: later rows are all kept, and the limit applies
  // when the caller reads (the merged order is the same).
  top_k_ = false;
  return Spill();
}

Status Sorter::Spill() {
  if (rows_.empty()) return Status::OK();
  std::error_code ec;
  std::filesystem::create_directories(options_.temp_dir, ec);
  if (ec) return Status(ErrorCode::kInternalError, "cannot create '" + options_.temp_dir + "': " + ec.message());
  std::string path = options_.temp_dir + "/sort-" + std::to_string(::getpid()) + "-" +
                     std::to_string(g_run_counter.fetch_add(1)) + ".run";
  std::FILE* f = std::fopen(path.c_str(), "w+b");
  if (f == nullptr) return IoError("cannot create sort run", path);
  auto run = std::make_unique<Run>(path, f);
  std::sort(rows_.begin(), rows_.end(), [this](const Row& a, const Row& b) { return RowLess(a, b); });
  for (const Row& r : rows_) RETURN_IF_ERROR(run->Write(r));
  RETURN_IF_ERROR(run->FinishWriting());
  runs_.push_back(std::move(run));
  rows_.clear();
  rows_.shrink_to_fit();
  memory_ = 0;
  return Status::OK();
}

Status Sorter::Finish() {
  finished_ = true;
  if (runs_.empty()) {
    std::sort(rows_.begin(), rows_.end(), [this](const Row& a, const Row& b) { return RowLess(a, b); });
    return Status::OK();
  }
  RETURN_IF_ERROR(Spill());  // the rest joins the merge as the last run
  for (size_t i = 0; i < runs_.size(); ++i) {
    ASSIGN_OR_RETURN(bool has, runs_[i]->Advance(*spec_));
    if (has) heap_.push_back(i);
  }
  std::make_heap(heap_.begin(), heap_.end(), [this](size_t a, size_t b) {
    return RowLess(runs_[b]->head(), runs_[a]->head());  // min-heap
  });
  return Status::OK();
}

StatusOr<bool> Sorter::Next(Document* doc, std::string* extra) {
  if (!finished_) return Status(ErrorCode::kInternalError, "Sorter::Next before Finish");
  if (runs_.empty()) {
    if (emitted_ == rows_.size()) return false;
    Row& r = rows_[emitted_++];
    *doc = std::move(r.doc);
    *extra = std::move(r.extra);
    return true;
  }
  if (heap_.empty()) return false;
  auto greater = [this](size_t a, size_t b) { return RowLess(runs_[b]->head(), runs_[a]->head()); };
  std::pop_heap(heap_.begin(), heap_.end(), greater);
  size_t i = heap_.back();
  heap_.pop_back();
  Row& head = runs_[i]->head();
  *doc = std::move(head.doc);
  *extra = std::move(head.extra);
  ASSIGN_OR_RETURN(bool more, runs_[i]->Advance(*spec_));
  if (more) {
    heap_.push_back(i);
    std::push_heap(heap_.begin(), heap_.end(), greater);
  }
  return true;
}

}  // namespace projection
}  // namespace gatedb
