#include "tests/fault/fault_fs.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace gatedb {
namespace test {

namespace {

using rocksdb::FileOptions;
using rocksdb::FSDirectory;
using rocksdb::FSRandomRWFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

// One spelling per file: RocksDB joins names as dir + "/" + file, and the
// directory it syncs must compare equal to the file's parent.
std::string Normalize(const std::string& path) {
  std::string out;
  out.reserve(path.size());
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string Parent(const std::string& normalized) {
  size_t slash = normalized.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return normalized.substr(0, slash);
}

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Cuts a file on the real file system.  The local one has no
// FileSystem::Truncate, but its open files can be truncated.
IOStatus TruncateFile(rocksdb::FileSystem* fs, const std::string& name, uint64_t size) {
  IOStatus s = fs->Truncate(name, size, IOOptions(), nullptr);
  if (!s.IsNotSupported()) return s;
  std::unique_ptr<FSWritableFile> file;
  s = fs->ReopenWritableFile(name, FileOptions(), &file, nullptr);
  if (s.ok()) s = file->Truncate(size, IOOptions(), nullptr);
  if (file) {
    IOStatus c = file->Close(IOOptions(), nullptr);
    if (s.ok()) s = c;
  }
  return s;
}

IOStatus Inactive() { return IOStatus::IOError("filesystem inactive (simulated power loss)"); }

}  // namespace

// A writable file that reports every append, sync and close to the file
// system, which decides whether it may happen and remembers what is durable.
class FaultInjectionFS::File : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  File(FaultInjectionFS* fs, std::string name, std::unique_ptr<FSWritableFile> target)
      : FSWritableFileOwnerWrapper(std::move(target)), fs_(fs), name_(std::move(name)) {}
  ~File() override {
    // An unclosed file is closed by its target's destructor; the bytes it
    // holds stay unsynced, as after Close.
    if (!closed_) fs_->Closed(name_);
  }

  IOStatus Append(const Slice& data, const IOOptions& options, IODebugContext* dbg) override {
    return DoAppend(data, [&](const Slice& d) { return target()->Append(d, options, dbg); });
  }
  IOStatus Append(const Slice& data, const IOOptions& options, const rocksdb::DataVerificationInfo& info,
                  IODebugContext* dbg) override {
    return DoAppend(data, [&](const Slice& d) { return target()->Append(d, options, info, dbg); });
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& options,
                            IODebugContext* dbg) override {
    return DoPositionedAppend(data, offset,
                              [&](const Slice& d) { return target()->PositionedAppend(d, offset, options, dbg); });
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& options,
                            const rocksdb::DataVerificationInfo& info, IODebugContext* dbg) override {
    return DoPositionedAppend(
        data, offset, [&](const Slice& d) { return target()->PositionedAppend(d, offset, options, info, dbg); });
  }

  IOStatus Truncate(uint64_t size, const IOOptions& options, IODebugContext* dbg) override {
    IOStatus s = fs_->CheckActive();
    if (s.ok()) s = target()->Truncate(size, options, dbg);
    if (s.ok()) {
      std::lock_guard<std::mutex> l(fs_->mu_);
      FileState& f = fs_->files_[name_];
      f.size = size;
      f.synced = std::min(f.synced, size);
    }
    return s;
  }

  IOStatus Sync(const IOOptions& options, IODebugContext* dbg) override {
    return DoSync([&] { return target()->Sync(options, dbg); });
  }
  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    return DoSync([&] { return target()->Fsync(options, dbg); });
  }
  // sync_file_range(2) starts writeback but promises nothing after a crash
  // (no metadata, no wait), so it is not a sync here.  While the machine is
  // down it does nothing.
  IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const IOOptions& options, IODebugContext* dbg) override {
    IOStatus s = fs_->CheckActive();
    if (!s.ok()) return s;
    return target()->RangeSync(offset, nbytes, options, dbg);
  }

  // Always closes (the descriptor must be released even when the machine is
  // "down"); closing makes nothing durable.
  IOStatus Close(const IOOptions& options, IODebugContext* dbg) override {
    IOStatus s = target()->Close(options, dbg);
    if (!closed_) {
      closed_ = true;
      fs_->Closed(name_);
    }
    return s;
  }

 private:
  template <typename Write>
  IOStatus DoAppend(const Slice& data, Write write) {
    size_t torn = 0;
    IOStatus s = fs_->BeforeAppend(name_, data.size(), &torn);
    if (!s.ok()) {
      if (torn > 0 && write(Slice(data.data(), torn)).ok()) fs_->AfterAppend(name_, torn, false);
      return s;
    }
    s = write(data);
    if (s.ok()) fs_->AfterAppend(name_, data.size(), false);
    return s;
  }
  template <typename Write>
  IOStatus DoPositionedAppend(const Slice& data, uint64_t offset, Write write) {
    size_t torn = 0;
    IOStatus s = fs_->BeforeAppend(name_, data.size(), &torn);
    if (!s.ok()) return s;  // positioned writes are not torn: direct I/O only
    s = write(data);
    if (s.ok()) fs_->AfterAppend(name_, offset + data.size(), true);
    return s;
  }
  template <typename SyncFn>
  IOStatus DoSync(SyncFn sync) {
    uint64_t size = 0;
    IOStatus s = fs_->BeforeSync(name_, &size);
    if (!s.ok()) return s;
    s = sync();
    if (s.ok()) fs_->AfterSync(name_, size);
    return s;
  }

  FaultInjectionFS* const fs_;
  const std::string name_;
  bool closed_ = false;
};

// A directory whose sync makes the files created in it so far survive a
// power loss (their names, not their unsynced bytes).
class FaultInjectionFS::Directory : public rocksdb::FSDirectoryWrapper {
 public:
  Directory(FaultInjectionFS* fs, std::string name, std::unique_ptr<FSDirectory> target)
      : FSDirectoryWrapper(std::move(target)), fs_(fs), name_(std::move(name)) {}

  IOStatus Fsync(const IOOptions& options, IODebugContext* dbg) override {
    IOStatus s = fs_->CheckActive();
    if (s.ok()) s = FSDirectoryWrapper::Fsync(options, dbg);
    if (s.ok()) fs_->DirectorySynced(name_);
    return s;
  }
  IOStatus FsyncWithDirOptions(const IOOptions& options, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& dir_options) override {
    IOStatus s = fs_->CheckActive();
    if (s.ok()) s = FSDirectoryWrapper::FsyncWithDirOptions(options, dbg, dir_options);
    if (s.ok()) fs_->DirectorySynced(name_);
    return s;
  }

 private:
  FaultInjectionFS* const fs_;
  const std::string name_;
};

FaultInjectionFS::FaultInjectionFS(std::shared_ptr<rocksdb::FileSystem> base)
    : FileSystemWrapper(std::move(base)) {}

FaultInjectionFS::~FaultInjectionFS() = default;

// ---- Controls ---------------------------------------------------------------

void FaultInjectionFS::SetFilesystemActive(bool active) {
  std::lock_guard<std::mutex> l(mu_);
  active_ = active;
}

bool FaultInjectionFS::filesystem_active() const {
  std::lock_guard<std::mutex> l(mu_);
  return active_;
}

void FaultInjectionFS::FailWrites(FaultTarget target, uint64_t after, uint64_t count) {
  std::lock_guard<std::mutex> l(mu_);
  write_target_ = target;
  writes_before_failure_ = after;
  writes_to_fail_ = count;
}

void FaultInjectionFS::SetTornWrites(bool torn) {
  std::lock_guard<std::mutex> l(mu_);
  torn_writes_ = torn;
}

void FaultInjectionFS::SetRetryableErrors(bool retryable) {
  std::lock_guard<std::mutex> l(mu_);
  retryable_ = retryable;
}

void FaultInjectionFS::SetNoSpaceErrors(bool no_space) {
  std::lock_guard<std::mutex> l(mu_);
  no_space_ = no_space;
}

void FaultInjectionFS::FailSyncs(FaultTarget target, bool fail) {
  std::lock_guard<std::mutex> l(mu_);
  sync_target_ = target;
  fail_syncs_ = fail;
}

void FaultInjectionFS::ClearFaults() {
  std::lock_guard<std::mutex> l(mu_);
  writes_before_failure_ = 0;
  writes_to_fail_ = 0;
  torn_writes_ = false;
  retryable_ = false;
  no_space_ = false;
  fail_syncs_ = false;
}

FaultInjectionFS::Counters FaultInjectionFS::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

uint64_t FaultInjectionFS::UnsyncedBytes() const {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t n = 0;
  for (const auto& [name, f] : files_) n += f.size - std::min(f.synced, f.size);
  return n;
}

IOStatus FaultInjectionFS::DropUnsyncedData() {
  std::map<std::string, FileState> files;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [name, f] : files_) {
      if (f.open > 0) return IOStatus::InvalidArgument("DropUnsyncedData: still open for writing: " + name);
    }
    files.swap(files_);
  }
  IOStatus first;
  uint64_t dropped_bytes = 0, dropped_files = 0;
  for (const auto& [name, f] : files) {
    IOStatus s;
    if (f.synced == 0 && !f.dir_synced) {
      // Its name never reached the disk.
      s = target()->DeleteFile(name, IOOptions(), nullptr);
      if (s.IsPathNotFound() || s.IsNotFound()) s = IOStatus::OK();
      if (s.ok()) {
        ++dropped_files;
        dropped_bytes += f.size;
      }
    } else {
      uint64_t real_size = 0;
      s = target()->GetFileSize(name, IOOptions(), &real_size, nullptr);
      if (s.IsPathNotFound() || s.IsNotFound()) {
        s = IOStatus::OK();  // deleted since (deletes are durable at once)
      } else if (s.ok() && real_size > f.synced) {
        s = TruncateFile(target(), name, f.synced);
        if (s.ok()) dropped_bytes += real_size - f.synced;
      }
    }
    if (!s.ok() && first.ok()) first = s;
  }
  std::lock_guard<std::mutex> l(mu_);
  counters_.dropped_bytes += dropped_bytes;
  counters_.dropped_files += dropped_files;
  return first;
}

// ---- Bookkeeping for File and Directory -------------------------------------

IOStatus FaultInjectionFS::Injected(const std::string& what) const {
  IOStatus s = no_space_ ? IOStatus::NoSpace(what) : IOStatus::IOError(what);
  s.SetRetryable(retryable_);
  return s;
}

bool FaultInjectionFS::Matches(FaultTarget target, const std::string& fname) const {
  return target == FaultTarget::kAll || EndsWith(fname, ".log");
}

IOStatus FaultInjectionFS::CheckActive() const {
  std::lock_guard<std::mutex> l(mu_);
  return active_ ? IOStatus::OK() : Inactive();
}

IOStatus FaultInjectionFS::BeforeAppend(const std::string& fname, size_t n, size_t* torn_prefix) {
  std::lock_guard<std::mutex> l(mu_);
  *torn_prefix = 0;
  if (!active_) {
    ++counters_.failed_appends;
    return Inactive();
  }
  if (writes_to_fail_ > 0 && Matches(write_target_, fname)) {
    if (writes_before_failure_ > 0) {
      --writes_before_failure_;
    } else {
      if (writes_to_fail_ != kForever) --writes_to_fail_;
      ++counters_.failed_appends;
      if (torn_writes_) *torn_prefix = n / 2;
      return Injected("injected write failure: " + fname);
    }
  }
  return IOStatus::OK();
}

void FaultInjectionFS::AfterAppend(const std::string& fname, uint64_t n, bool positioned) {
  std::lock_guard<std::mutex> l(mu_);
  FileState& f = files_[fname];
  f.size = positioned ? std::max(f.size, n) : f.size + n;
  ++counters_.appends;
  if (EndsWith(fname, ".log")) ++counters_.wal_appends;
}

IOStatus FaultInjectionFS::BeforeSync(const std::string& fname, uint64_t* size) {
  std::lock_guard<std::mutex> l(mu_);
  if (!active_) {
    ++counters_.failed_syncs;
    return Inactive();
  }
  if (fail_syncs_ && Matches(sync_target_, fname)) {
    ++counters_.failed_syncs;
    return Injected("injected sync failure: " + fname);
  }
  // What the sync covers: the bytes appended before it began.
  *size = files_[fname].size;
  return IOStatus::OK();
}

void FaultInjectionFS::AfterSync(const std::string& fname, uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  FileState& f = files_[fname];
  f.synced = std::max(f.synced, std::min(size, f.size));
  ++counters_.syncs;
  if (EndsWith(fname, ".log")) ++counters_.wal_syncs;
}

void FaultInjectionFS::Closed(const std::string& fname) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = files_.find(fname);
  if (it != files_.end() && it->second.open > 0) --it->second.open;
}

void FaultInjectionFS::DirectorySynced(const std::string& dirname) {
  std::string dir = Normalize(dirname);
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [name, f] : files_) {
    if (Parent(name) == dir) f.dir_synced = true;
  }
  ++counters_.dir_syncs;
}

void FaultInjectionFS::Track(const std::string& fname, uint64_t size, bool durable) {
  std::lock_guard<std::mutex> l(mu_);
  FileState& f = files_[fname];
  f.size = size;
  f.synced = durable ? size : 0;
  f.dir_synced = durable;
  ++f.open;
}

// ---- rocksdb::FileSystem ----------------------------------------------------

IOStatus FaultInjectionFS::NewWritableFile(const std::string& fname, const FileOptions& opts,
                                           std::unique_ptr<FSWritableFile>* result, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  std::string name = Normalize(fname);
  // A file that already had a durable name keeps it; its old contents are
  // gone (O_TRUNC) and the new ones are not synced yet.
  bool existed = target()->FileExists(name, IOOptions(), nullptr).ok();
  std::unique_ptr<FSWritableFile> file;
  s = target()->NewWritableFile(fname, opts, &file, dbg);
  if (!s.ok()) return s;
  Track(name, 0, false);
  if (existed) {
    std::lock_guard<std::mutex> l(mu_);
    files_[name].dir_synced = true;
  }
  result->reset(new File(this, name, std::move(file)));
  return s;
}

IOStatus FaultInjectionFS::ReopenWritableFile(const std::string& fname, const FileOptions& opts,
                                              std::unique_ptr<FSWritableFile>* result, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  std::string name = Normalize(fname);
  bool tracked;
  {
    std::lock_guard<std::mutex> l(mu_);
    tracked = files_.count(name) > 0;
  }
  std::unique_ptr<FSWritableFile> file;
  s = target()->ReopenWritableFile(fname, opts, &file, dbg);
  if (!s.ok()) return s;
  if (tracked) {
    std::lock_guard<std::mutex> l(mu_);
    ++files_[name].open;  // keeps what is and is not synced yet
  } else {
    uint64_t size = 0;
    target()->GetFileSize(name, IOOptions(), &size, nullptr).PermitUncheckedError();
    Track(name, size, true);  // it was there before us: durable as it is
  }
  result->reset(new File(this, name, std::move(file)));
  return s;
}

IOStatus FaultInjectionFS::ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                             const FileOptions& opts, std::unique_ptr<FSWritableFile>* result,
                                             IODebugContext* dbg) {
  // Only with recycle_log_file_num > 0, which gatedb does not set: a
  // recycled file is overwritten from its start, which this model's
  // append-only sizes cannot describe.
  return IOStatus::NotSupported("FaultInjectionFS does not recycle files");
}

IOStatus FaultInjectionFS::NewRandomRWFile(const std::string& fname, const FileOptions& opts,
                                           std::unique_ptr<FSRandomRWFile>* result, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  return target()->NewRandomRWFile(fname, opts, result, dbg);
}

IOStatus FaultInjectionFS::NewDirectory(const std::string& name, const IOOptions& opts,
                                        std::unique_ptr<FSDirectory>* result, IODebugContext* dbg) {
  std::unique_ptr<FSDirectory> dir;
  IOStatus s = target()->NewDirectory(name, opts, &dir, dbg);
  if (!s.ok()) return s;
  result->reset(new Directory(this, Normalize(name), std::move(dir)));
  return s;
}

IOStatus FaultInjectionFS::DeleteFile(const std::string& fname, const IOOptions& opts, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  s = target()->DeleteFile(fname, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    files_.erase(Normalize(fname));
  }
  return s;
}

IOStatus FaultInjectionFS::RenameFile(const std::string& src, const std::string& dst, const IOOptions& opts,
                                      IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  s = target()->RenameFile(src, dst, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    std::string from = Normalize(src), to = Normalize(dst);
    auto it = files_.find(from);
    if (it != files_.end()) {
      FileState f = it->second;
      files_.erase(it);
      files_[to] = f;
    } else {
      files_.erase(to);  // replaced by a durable file
    }
  }
  return s;
}

IOStatus FaultInjectionFS::LinkFile(const std::string& src, const std::string& dst, const IOOptions& opts,
                                    IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  s = target()->LinkFile(src, dst, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(Normalize(src));
    if (it != files_.end()) {
      FileState f = it->second;
      f.open = 0;
      files_[Normalize(dst)] = f;
    }
  }
  return s;
}

IOStatus FaultInjectionFS::Truncate(const std::string& fname, size_t size, const IOOptions& opts,
                                    IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  s = target()->Truncate(fname, size, opts, dbg);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(Normalize(fname));
    if (it != files_.end()) {
      it->second.size = size;
      it->second.synced = std::min<uint64_t>(it->second.synced, size);
    }
  }
  return s;
}

IOStatus FaultInjectionFS::CreateDir(const std::string& dirname, const IOOptions& opts, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  return target()->CreateDir(dirname, opts, dbg);
}

IOStatus FaultInjectionFS::CreateDirIfMissing(const std::string& dirname, const IOOptions& opts,
                                              IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  return target()->CreateDirIfMissing(dirname, opts, dbg);
}

IOStatus FaultInjectionFS::DeleteDir(const std::string& dirname, const IOOptions& opts, IODebugContext* dbg) {
  IOStatus s = CheckActive();
  if (!s.ok()) return s;
  return target()->DeleteDir(dirname, opts, dbg);
}

}  // namespace test
}  // namespace gatedb
