#include "engine/projection/sort.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "engine/document/bson_compare.h"
#include "engine/projection/paths.h"

namespace gatedb {
namespace projection {

namespace {

constexpr char kOrderingMessage[] =
    "$sort key ordering must be 1 (for ascending) or -1 (for descending)";

// MongoDB's BSONElement::safeNumberLong(): the integer part, NaN as 0.
// REQUIRES: IsNumberType(v.value_type).
long double TruncatedNumber(const bson_value_t& v) {
  long double x = NumberAsLongDouble(v);
  if (std::isnan(x)) return 0;
  return std::trunc(x);
}

// Keeps the smallest (ascending) or largest (descending) value visited.
class BestValue : public PathValueVisitor {
 public:
  explicit BestValue(bool ascending) : ascending_(ascending) {}

  void Visit(const bson_value_t& value) override {
    if (!has_value_) {
      best_ = value;
      has_value_ = true;
      return;
    }
    int c = CompareValues(value, best_);
    if (ascending_ ? c < 0 : c > 0) best_ = value;
  }

  bool has_value() const { return has_value_; }
  const bson_value_t& best() const { return best_; }

 private:
  const bool ascending_;
  bool has_value_ = false;
  bson_value_t best_{};
};

}  // namespace

SortKey::SortKey(const SortKey& other) : buf_(other.buf_) { Index(); }

SortKey& SortKey::operator=(const SortKey& other) {
  if (this != &other) {
    buf_ = other.buf_;
    Index();
  }
  return *this;
}

void SortKey::Index() {
  values_.clear();
  if (buf_.empty()) return;
  bson_t view;
  bson_iter_t it;
  if (!bson_init_static(&view, buf_.data(), buf_.size()) || !bson_iter_init(&it, &view)) return;
  while (bson_iter_next(&it)) values_.push_back(*bson_iter_value(&it));
}

StatusOr<std::unique_ptr<SortSpec>> SortSpec::Parse(const bson_t* spec) {
  std::unique_ptr<SortSpec> result(new SortSpec());
  bson_iter_t it;
  if (!bson_iter_init(&it, spec)) {
    return Status(ErrorCode::kBadValue, "invalid sort specification");
  }
  std::set<std::string, std::less<>> seen;
  while (bson_iter_next(&it)) {
    std::string_view path(bson_iter_key(&it), bson_iter_key_len(&it));
    const bson_type_t type = bson_iter_type(&it);
    if (type == BSON_TYPE_DOCUMENT) {
      bson_iter_t sub;
      if (bson_iter_recurse(&it, &sub) && bson_iter_next(&sub) &&
          std::strcmp(bson_iter_key(&sub), "$meta") == 0) {
        return Status(ErrorCode::kBadValue, "$meta sort is not supported");
      }
      return Status(ErrorCode::kBadValue,
                    "$meta is the only expression supported by $sort right now");
    }
    if (!IsNumberType(type)) return Status(ErrorCode::kLocation15974, kOrderingMessage);
    const long double direction = TruncatedNumber(*bson_iter_value(&it));
    if (direction != 1 && direction != -1) {
      return Status(ErrorCode::kLocation15975, kOrderingMessage);
    }
    RETURN_IF_ERROR(ValidateFieldPath(path));
    if (!seen.emplace(path).second) {
      return Status(ErrorCode::kBadValue, "$sort key must not contain duplicate keys (duplicate: '" +
                                              std::string(path) + "')");
    }
    result->fields_.push_back(Field{std::string(path), {}, direction > 0});
  }
  // fields_ no longer grows: the views below stay valid.
  for (Field& field : result->fields_) field.parts = SplitDottedPath(field.path);
  return result;
}

void SortSpec::ExtractKey(const bson_t* doc, SortKey* key) const {
  bson_t b;
  bson_init(&b);
  for (const Field& field : fields_) {
    BestValue best(field.ascending);
    VisitPathValues(doc, field.parts, MissingPolicy::kNullAndUndefined, &best);
    if (best.has_value()) {
      bson_append_value(&b, "", 0, &best.best());
    } else {
      bson_append_null(&b, "", 0);
    }
  }
  const uint8_t* data = bson_get_data(&b);
  key->buf_.assign(data, data + b.len);
  bson_destroy(&b);
  key->Index();
}

int SortSpec::CompareKeys(const SortKey& a, const SortKey& b) const {
  const size_t n = std::min(std::min(a.size(), b.size()), fields_.size());
  for (size_t i = 0; i < n; ++i) {
    int c = CompareValues(a.value(i), b.value(i));
    if (c != 0) {
      c = c < 0 ? -1 : 1;
      return fields_[i].ascending ? c : -c;
    }
  }
  return 0;
}

int SortSpec::Compare(const bson_t* a, const bson_t* b) const {
  SortKey ka, kb;
  ExtractKey(a, &ka);
  ExtractKey(b, &kb);
  return CompareKeys(ka, kb);
}

}  // namespace projection
}  // namespace gatedb
