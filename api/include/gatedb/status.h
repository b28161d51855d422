// File: gatedb/status.h
//
// Status and StatusOr<T>: how every gatedb call reports failure.  Nothing in
// gatedb throws across its public API; every fallible call returns one of
// these.  Codes are MongoDB's numbers (see error_codes.def), so a reply built
// from a Status means the same to a MongoDB driver.
//
// Thread safety: both are values; const methods may be called concurrently.
//
//   gatedb::StatusOr<gatedb::Document> doc = coll->FindOne(filter);
//   if (!doc.ok()) return doc.status();
#ifndef GATEDB_STATUS_H_
#define GATEDB_STATUS_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gatedb {

class Document;

enum class ErrorCode : int {
#define GATEDB_ERROR_CODE(name, num, retriable) k##name = num,
#include "gatedb/error_codes.def"
#undef GATEDB_ERROR_CODE
};

// The MongoDB code name ("DuplicateKey"); "UnknownError" for an unlisted code.
const char* ErrorCodeName(ErrorCode code);
// True for codes whose operation may succeed when simply retried.
bool IsRetriable(ErrorCode code);

class [[nodiscard]] Status {
 public:
  // Success.  Costs no allocation.
  Status() = default;
  Status(ErrorCode code, std::string reason) : code_(code), reason_(std::move(reason)) {}
  // With MongoDB's `errInfo`: structured details an agent can act on (for
  // VersionConflict: basisVersion, currentVersion, current, ...).
  Status(ErrorCode code, std::string reason, std::shared_ptr<const Document> err_info)
      : code_(code), reason_(std::move(reason)), err_info_(std::move(err_info)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOK; }
  ErrorCode code() const { return code_; }
  int code_number() const { return static_cast<int>(code_); }
  const char* code_name() const { return ErrorCodeName(code_); }
  // The human-readable reason (MongoDB's `errmsg`).  Empty on success.
  const std::string& reason() const { return reason_; }
  // "DuplicateKey (11000): reason" or "OK".
  std::string ToString() const;
  // The error's details (MongoDB's errInfo), or null.  Include
  // gatedb/document.h to read it.
  const Document* err_info() const { return err_info_.get(); }

  // Marks a Status that is deliberately ignored, so that it is searchable.
  void PermitUnchecked() const {}

 private:
  ErrorCode code_ = ErrorCode::kOK;
  std::string reason_;
  std::shared_ptr<const Document> err_info_;
};

inline bool operator==(const Status& a, const Status& b) {
  return a.code() == b.code() && a.reason() == b.reason();
}

// A value of type T, or the Status saying why there is none.
// REQUIRES: a StatusOr built from a Status holds a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status(ErrorCode::kInternalError, "StatusOr built from an OK Status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace gatedb

#define GATEDB_CONCAT_INNER_(a, b) a##b
#define GATEDB_CONCAT_(a, b) GATEDB_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::gatedb::Status _gatedb_status = (expr);    \
    if (!_gatedb_status.ok()) return _gatedb_status; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr());` declares x from the value, or
// returns the error from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  GATEDB_ASSIGN_OR_RETURN_IMPL_(GATEDB_CONCAT_(_gatedb_statusor_, __LINE__), lhs, expr)
#define GATEDB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#endif  // GATEDB_STATUS_H_
