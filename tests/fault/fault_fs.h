// FaultInjectionFS: a rocksdb::FileSystem for tests that can lose power and
// fail writes on demand.
//
// It wraps a real file system (the default: the local disk) and keeps, for
// every file written through it, how many bytes were appended and how many
// of those were synced (Sync / Fsync; a RangeSync or a Close does not make
// data durable, as on Linux).  Then:
//
//   - DropUnsyncedData() is a power loss: every file is cut back to what was
//     synced, and a file that was never synced and whose directory was never
//     synced after it was created disappears;
//   - SetFilesystemActive(false) is "the machine is down": every append,
//     sync and change of the directory tree fails with an IOError from then
//     on (reads still work, and Close still releases the descriptor), so
//     that nothing a process does after the moment of the power loss reaches
//     the disk;
//   - FailWrites / FailSyncs make appends or syncs of the WAL (*.log) or of
//     every file fail with an IOError, now or after a number of appends.
//
//   auto fs = std::make_shared<FaultInjectionFS>();
//   std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
//   Options o;
//   o.env = env.get();                  // env and fs outlive the Database
//   auto db = Database::Open(dir, o);
//   ... writes ...
//   fs->SetFilesystemActive(false);     // power goes out here
//   db->reset();                        // the process dies (close writes nothing)
//   fs->DropUnsyncedData();             // the disk keeps only what was synced
//   fs->SetFilesystemActive(true);
//   db = Database::Open(dir, o);        // the machine comes back
//
// Model and limits (smaller than RocksDB's own test file system, on purpose):
//   - Only files opened for writing through this object are tracked; a file
//     that existed before (or was written by another process) is durable as
//     it is.  A reopened file (ReopenWritableFile) starts durable at its size.
//   - Deleting and renaming are durable at once (a rename moves the tracked
//     state to the new name); only a *new* file depends on a directory sync.
//   - Random-access writes (NewRandomRWFile) are not tracked.
//   - DropUnsyncedData REQUIRES that no tracked file is still open for
//     writing (close the Database first).
//
// Thread safety: every method may be called from any thread.
#ifndef GATEDB_TESTS_FAULT_FAULT_FS_H_
#define GATEDB_TESTS_FAULT_FAULT_FS_H_

#include <rocksdb/file_system.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace gatedb {
namespace test {

// Which files an injected failure hits.
enum class FaultTarget {
  kWal,  // RocksDB's write-ahead log: names ending in ".log"
  kAll,  // every file written through the file system
};

class FaultInjectionFS : public rocksdb::FileSystemWrapper {
 public:
  static constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

  explicit FaultInjectionFS(std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default());
  ~FaultInjectionFS() override;

  const char* Name() const override { return "GatedbFaultInjectionFS"; }

  // ---- Power loss.

  // false: the machine is down.  Appends, syncs, new files, deletes,
  // renames, truncations and directory syncs fail with IOError("filesystem
  // inactive"); reads and Close still succeed.  Default: true.
  void SetFilesystemActive(bool active);
  bool filesystem_active() const;

  // Cuts every tracked file back to its last synced size and deletes the
  // tracked files that were never synced and whose directory was not synced
  // since they were created; then forgets them (what is left is durable).
  // Works whether or not the file system is active.  REQUIRES: no tracked
  // file is open for writing.  Returns the first error of the real file
  // system, after trying every file; InvalidArgument (and nothing dropped)
  // when a tracked file is still open for writing.
  rocksdb::IOStatus DropUnsyncedData();

  // Bytes appended to tracked files and not synced yet (what a power loss
  // now would lose).
  uint64_t UnsyncedBytes() const;

  // ---- Injected failures (all are cleared by ClearFaults).

  // After `after` more successful appends to `target` files, the next
  // `count` appends to them fail (kForever: all of them).  Replaces an
  // earlier FailWrites.  With torn writes on, a failing append first writes
  // the first half of its data (a torn write; the call still fails).
  void FailWrites(FaultTarget target, uint64_t after, uint64_t count = kForever);
  void SetTornWrites(bool torn);
  // Injected errors are marked retryable (IOStatus::SetRetryable), which
  // lets RocksDB resume by itself instead of staying read-only.
  void SetRetryableErrors(bool retryable);
  // Injected errors are "No space left on device" (IOStatus::NoSpace), which
  // RocksDB also recovers from by itself once its SstFileManager sees free
  // space.
  void SetNoSpaceErrors(bool no_space);
  // While on, Sync and Fsync of `target` files fail (and sync nothing).
  void FailSyncs(FaultTarget target, bool fail);
  void ClearFaults();

  // ---- Counters (since construction).
  struct Counters {
    uint64_t appends = 0;         // successful appends, every file
    uint64_t wal_appends = 0;     // of those, to WAL files
    uint64_t syncs = 0;           // successful Sync/Fsync, every file
    uint64_t wal_syncs = 0;       // of those, of WAL files
    uint64_t dir_syncs = 0;       // successful directory syncs
    uint64_t failed_appends = 0;  // injected or inactive
    uint64_t failed_syncs = 0;    // injected or inactive
    uint64_t dropped_bytes = 0;   // cut by DropUnsyncedData
    uint64_t dropped_files = 0;   // deleted by DropUnsyncedData
  };
  Counters counters() const;

  // ---- rocksdb::FileSystem.
  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* result,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& opts,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomRWFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& opts,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& fname, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& dst, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& src, const std::string& dst, const rocksdb::IOOptions& opts,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& fname, size_t size, const rocksdb::IOOptions& opts,
                             rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDir(const std::string& dirname, const rocksdb::IOOptions& opts,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDirIfMissing(const std::string& dirname, const rocksdb::IOOptions& opts,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteDir(const std::string& dirname, const rocksdb::IOOptions& opts,
                              rocksdb::IODebugContext* dbg) override;

 private:
  class File;
  class Directory;
  friend class File;
  friend class Directory;

  // What is known about one file written through this object.
  struct FileState {
    uint64_t size = 0;      // bytes appended (or truncated to)
    uint64_t synced = 0;    // bytes known durable
    bool dir_synced = false;  // its directory was synced after it was created
    int open = 0;           // writers open on it
  };

  // Called by File.  Each decides under mu_ whether the operation may run
  // and records its effect.
  // An append of n bytes may run; when it may not, *torn_prefix is how much
  // of it to write anyway (a torn write).
  rocksdb::IOStatus BeforeAppend(const std::string& fname, size_t n, size_t* torn_prefix);
  // n bytes were appended (positioned: the file now ends at n or later).
  void AfterAppend(const std::string& fname, uint64_t n, bool positioned);
  // A sync may run; *size is what it will cover.
  rocksdb::IOStatus BeforeSync(const std::string& fname, uint64_t* size);
  void AfterSync(const std::string& fname, uint64_t size);
  rocksdb::IOStatus CheckActive() const;
  // An injected failure.  REQUIRES: mu_ held.
  rocksdb::IOStatus Injected(const std::string& what) const;
  void Closed(const std::string& fname);
  void DirectorySynced(const std::string& dirname);
  void Track(const std::string& fname, uint64_t size, bool durable);
  bool Matches(FaultTarget target, const std::string& fname) const;

  mutable std::mutex mu_;
  bool active_ = true;                     // GUARDED_BY(mu_)
  std::map<std::string, FileState> files_;  // GUARDED_BY(mu_); by normalized path
  // FailWrites: appends to let through first, then appends to fail.
  FaultTarget write_target_ = FaultTarget::kWal;  // GUARDED_BY(mu_)
  uint64_t writes_before_failure_ = 0;            // GUARDED_BY(mu_)
  uint64_t writes_to_fail_ = 0;                   // GUARDED_BY(mu_)
  bool torn_writes_ = false;                      // GUARDED_BY(mu_)
  bool retryable_ = false;                        // GUARDED_BY(mu_)
  bool no_space_ = false;                         // GUARDED_BY(mu_)
  bool fail_syncs_ = false;                       // GUARDED_BY(mu_)
  FaultTarget sync_target_ = FaultTarget::kWal;   // GUARDED_BY(mu_)
  Counters counters_;                             // GUARDED_BY(mu_)
};

}  // namespace test
}  // namespace gatedb

#endif  // GATEDB_TESTS_FAULT_FAULT_FS_H_
