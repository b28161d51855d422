#include "engine/index/planner.h"

#include <algorithm>
#include <cstring>

#include "engine/document/bson_compare.h"
#include "engine/index/index_keys.h"
#include "engine/keys/key_codec.h"
#include "engine/keys/key_format.h"
#include "gatedb/value.h"

namespace gatedb {
namespace index {

namespace {

// A range of one path's values, in the byte space of an ascending component
// (EncodeValue): [lo, hi), or [lo, end) when hi_inf, lo empty: from the
// start; and of a descending one (EncodeValueDescending): [desc_lo,
// desc_hi), desc_lo meaning the value range's upper end (ignored when
// hi_inf: from the start), desc_hi its lower end (ignored when lo is empty:
// to the end).  A descending component is not the inverted ascending one
// (key_format.h), so both are kept.  "Before every key of v" is v's
// component C and "after every key of v" is C + 0xFF (kAfterValue): a
// decimal just beyond v starts with C + 0xFF, so C's successor would skip
// it.  A point holds exactly the keys of one value: [C, C + 0xFF).
struct VRange {
  std::string lo;
  std::string hi;
  std::string desc_lo;
  std::string desc_hi;
  bool hi_inf = false;
  bool point = false;
  std::string lo_text;  // "[5" or "(5" for explain
  std::string hi_text;  // "5]" or "inf.0]"
};
using RangeSet = std::vector<VRange>;  // ascending by lo, disjoint

// The operators that give bounds; kOther gives none.
enum class Op { kEq, kIn, kGt, kGte, kLt, kLte, kExists, kOther };

Op OpFromName(const char* name) {
  if (std::strcmp(name, "$eq") == 0) return Op::kEq;
  if (std::strcmp(name, "$in") == 0) return Op::kIn;
  if (std::strcmp(name, "$gt") == 0) return Op::kGt;
  if (std::strcmp(name, "$gte") == 0) return Op::kGte;
  if (std::strcmp(name, "$lt") == 0) return Op::kLt;
  if (std::strcmp(name, "$lte") == 0) return Op::kLte;
  if (std::strcmp(name, "$exists") == 0) return Op::kExists;
  return Op::kOther;
}

// One predicate: an operator and its argument (borrowed from the filter).
struct Clause {
  Op op;
  bson_value_t value;
};

// A top-level element of a filter (borrowed: the filter outlives planning).
// Not a bson_iter_t: its 128-byte alignment is lost in a std::vector.
struct Element {
  const char* key;
  bson_value_t value;
};

struct PathClauses {
  const char* path;  // borrowed from the filter
  std::vector<Clause> clauses;
};

struct Predicates {
  std::vector<PathClauses> paths;  // in the filter's order; a filter names few
  std::vector<Element> elements;   // top-level elements (through $and)
  bson_value_t or_array;           // the top-level $or, when exactly one
  int or_count = 0;
  // Only paths at the top level (no $and, $or, $expr, ...), every element
  // read to its end: an index whose bounds answer each path exactly
  // answers the whole filter.
  bool only_paths = true;

  const std::vector<Clause>* Find(const std::string& path) const {
    for (const PathClauses& p : paths) {
      if (path == p.path) return &p.clauses;
    }
    return nullptr;
  }
  std::vector<Clause>& Get(const char* path) {
    for (PathClauses& p : paths) {
      if (std::strcmp(path, p.path) == 0) return p.clauses;
    }
    paths.push_back(PathClauses{path, {}});
    return paths.back().clauses;
  }
};

// After every key equal to the value whose component is `c`: every byte that
// follows a component (the next component, the _id) is below 0xFF.
constexpr char kAfterValue = '\xFF';

std::string Encoded(const bson_value_t& v) {
  std::string out;
  keys::EncodeValue(v, &out);
  return out;
}

std::string EncodedDescending(const bson_value_t& v) {
  std::string out;
  keys::EncodeValueDescending(v, &out);
  return out;
}

std::string After(std::string c) {
  c.push_back(kAfterValue);
  return c;
}

std::string ValueText(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_MINKEY: return "MinKey";
    case BSON_TYPE_MAXKEY: return "MaxKey";
    case BSON_TYPE_NULL: return "null";
    case BSON_TYPE_UNDEFINED: return "undefined";
    default: return Value(v).ToJson();
  }
}

const char* TypeStartText(uint8_t type_byte) {
  if (type_byte == keys::kTypeNumber) return "-inf.0";
  if (type_byte == keys::kTypeString) return "\"\"";
  return "MinKey";
}
const char* TypeEndText(uint8_t type_byte) {
  if (type_byte == keys::kTypeNumber) return "inf.0";
  if (type_byte == keys::kTypeString) return "{}";
  return "MaxKey";
}

// `texts`: also fill lo_text/hi_text (only explain shows them: formatting a
// value costs more than the rest of planning an equality).  `desc`: also
// fill desc_lo/desc_hi (only a descending index field reads them).
VRange Point(const bson_value_t& v, bool texts, bool desc) {
  VRange r;
  r.lo = Encoded(v);
  r.hi = After(r.lo);
  if (desc) {
    r.desc_lo = EncodedDescending(v);
    r.desc_hi = After(r.desc_lo);
  }
  r.point = true;
  if (texts) {
    std::string t = ValueText(v);
    r.lo_text = "[" + t;
    r.hi_text = t + "]";
  }
  return r;
}

// [undefined, null]: what {a: null} may match (missing fields index as null).
VRange NullRange() {
  VRange r;
  bson_value_t u;
  std::memset(&u, 0, sizeof u);
  u.value_type = BSON_TYPE_UNDEFINED;
  r.lo = Encoded(u);
  r.desc_hi = After(EncodedDescending(u));
  u.value_type = BSON_TYPE_NULL;
  r.hi = After(Encoded(u));
  r.desc_lo = EncodedDescending(u);
  r.lo_text = "[undefined";
  r.hi_text = "null]";
  return r;
}

VRange Everything() {
  VRange r;
  r.hi_inf = true;
  r.lo_text = "[MinKey";
  r.hi_text = "MaxKey]";
  return r;
}

bool Unboundable(const bson_value_t& v) {
  return v.value_type == BSON_TYPE_ARRAY || v.value_type == BSON_TYPE_REGEX ||
         v.value_type == BSON_TYPE_MINKEY || v.value_type == BSON_TYPE_MAXKEY;
}

// Scalar types whose keys are equal exactly when the matcher finds the
// values equal (CompareValues), and order as it orders them: bounds built
// from them may stand in for the matcher.  Others (documents, binary,
// code, ...) would too, by the key format's design, but no query relies on
// it and the matcher checks them.
bool ExactType(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DECIMAL128:
    case BSON_TYPE_UTF8:
    case BSON_TYPE_OID:
    case BSON_TYPE_BOOL:
    case BSON_TYPE_DATE_TIME:
    case BSON_TYPE_TIMESTAMP:
      return true;
    default:
      return false;
  }
}

// Calls fn(key, value) for each element of an embedded document or array.
// False when the bytes end before the document does (malformed).
template <typename Fn>
bool ForEachElement(const bson_value_t& v, Fn&& fn) {
  if (v.value_type != BSON_TYPE_DOCUMENT && v.value_type != BSON_TYPE_ARRAY) return false;
  bson_t sub;
  if (!bson_init_static(&sub, v.value.v_doc.data, v.value.v_doc.data_len)) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, &sub)) return false;
  while (bson_iter_next(&it)) fn(bson_iter_key(&it), *bson_iter_value(&it));
  return it.err_off == 0;
}

// $eq, $gt, $gte, $lt or $lte of an ExactType value, or $in of an array of
// them: the matcher parses such a clause without error, and its bounds
// (but for a NaN range, ClauseRanges) are exactly its matches.
bool PlainClause(const Clause& c) {
  switch (c.op) {
    case Op::kEq:
    case Op::kGt:
    case Op::kGte:
    case Op::kLt:
    case Op::kLte:
      return ExactType(c.value);
    case Op::kIn: {
      if (c.value.value_type != BSON_TYPE_ARRAY) return false;
      bool all = true;
      const bool whole = ForEachElement(c.value, [&](const char*, const bson_value_t& e) { all = all && ExactType(e); });
      return whole && all;
    }
    default:
      return false;
  }
}

bool IsNaNKey(const std::string& e) {
  return e.size() >= 2 && static_cast<uint8_t>(e[0]) == keys::kTypeNumber &&
         static_cast<uint8_t>(e[1]) == keys::kNumNaN;
}

// The values a clause may match, or nullopt when it gives no bounds.
// `exact` is set when the set is exactly the clause's matches (per value)
// and the clause is a PlainClause.  `texts` as for Point(); `desc` too.
std::optional<RangeSet> ClauseRanges(const Clause& c, bool* exact, bool texts, bool desc) {
  if (exact) *exact = false;
  const bson_value_t& v = c.value;
  if (c.op == Op::kEq) {
    if (Unboundable(v)) return std::nullopt;
    if (v.value_type == BSON_TYPE_NULL) return RangeSet{NullRange()};
    if (exact) *exact = PlainClause(c);
    return RangeSet{Point(v, texts, desc)};
  }
  if (c.op == Op::kIn) {
    if (v.value_type != BSON_TYPE_ARRAY) return std::nullopt;
    bson_t arr;
    if (!bson_init_static(&arr, v.value.v_doc.data, v.value.v_doc.data_len)) return std::nullopt;
    bson_iter_t it;
    bson_iter_init(&it, &arr);
    RangeSet out;
    while (bson_iter_next(&it)) {
      const bson_value_t* e = bson_iter_value(&it);
      if (Unboundable(*e)) return std::nullopt;
      out.push_back(e->value_type == BSON_TYPE_NULL ? NullRange() : Point(*e, texts, desc));
    }
    std::sort(out.begin(), out.end(), [](const VRange& a, const VRange& b) { return a.lo < b.lo; });
    RangeSet merged;
    for (VRange& r : out) {
      if (!merged.empty() && !merged.back().hi_inf && r.lo < merged.back().hi) {
        if (r.hi > merged.back().hi) {
          merged.back().hi = r.hi;
          merged.back().desc_lo = r.desc_lo;
          merged.back().hi_text = r.hi_text;
        }
        merged.back().point = merged.back().point && r.point && merged.back().lo == r.lo;
        continue;
      }
      merged.push_back(std::move(r));
    }
    if (exact) *exact = PlainClause(c);
    return merged;  // an empty $in matches nothing: no ranges
  }
  if (c.op == Op::kGt || c.op == Op::kGte || c.op == Op::kLt || c.op == Op::kLte) {
    if (Unboundable(v) || v.value_type == BSON_TYPE_NULL || v.value_type == BSON_TYPE_UNDEFINED) {
      return std::nullopt;
    }
    const bool gt = c.op == Op::kGt, lt = c.op == Op::kLt;
    std::string e = Encoded(v), d = desc ? EncodedDescending(v) : std::string();
    uint8_t type_byte = static_cast<uint8_t>(e[0]);
    const bool nan = IsNaNKey(e);
    // The type's start and end (MongoDB's type bracketing); a descending
    // component of the type starts with ~type_byte.  NaN, the lowest
    // number, is below every number but equal to none: the numbers below
    // a number start at -Infinity (MongoDB's [-inf.0, v) too).
    const bool number = type_byte == keys::kTypeNumber && !nan;
    std::string t = texts ? ValueText(v) : std::string();
    VRange r;
    if (gt || c.op == Op::kGte) {
      r.lo = gt ? After(e) : e;
      r.hi.assign(1, static_cast<char>(type_byte + 1));  // the type's end
      if (desc) {
        r.desc_hi = gt ? d : After(d);
        r.desc_lo.assign(1, static_cast<char>(static_cast<uint8_t>(~type_byte)));
      }
      if (texts) {
        r.lo_text = (gt ? "(" : "[") + t;
        r.hi_text = std::string(TypeEndText(type_byte)) + "]";
      }
    } else {
      // The type's start.
      r.lo.assign(1, static_cast<char>(type_byte));
      if (number) r.lo.push_back(static_cast<char>(keys::kNumNegInf));
      r.hi = lt ? e : After(e);
      if (desc) {
        if (number) {
          r.desc_hi.assign(1, static_cast<char>(static_cast<uint8_t>(~type_byte)));
          r.desc_hi.push_back(static_cast<char>(static_cast<uint8_t>(~keys::kNumNaN)));
        } else {
          r.desc_hi.assign(1, static_cast<char>(static_cast<uint8_t>(~type_byte) + 1));
        }
        r.desc_lo = lt ? After(d) : d;
      }
      if (texts) {
        r.lo_text = std::string("[") + TypeStartText(type_byte);
        r.hi_text = t + (lt ? ")" : "]");
      }
    }
    // A NaN bound matches NaN alone ($gte, $lte) or nothing: the matcher decides.
    if (exact) *exact = PlainClause(c) && !nan;
    return RangeSet{r};
  }
  return std::nullopt;
}

bool Less(const std::string& a, bool a_inf, const std::string& b, bool b_inf) {
  if (a_inf) return false;
  if (b_inf) return true;
  return a < b;
}

RangeSet Intersect(const RangeSet& a, const RangeSet& b) {
  RangeSet out;
  for (const VRange& x : a) {
    for (const VRange& y : b) {
      VRange r;
      const VRange& lo_from = x.lo >= y.lo ? x : y;
      r.lo = lo_from.lo;
      r.desc_hi = lo_from.desc_hi;
      r.lo_text = lo_from.lo_text;
      const VRange& hi_from = Less(x.hi, x.hi_inf, y.hi, y.hi_inf) ? x : y;
      r.hi = hi_from.hi;
      r.desc_lo = hi_from.desc_lo;
      r.hi_inf = hi_from.hi_inf;
      r.hi_text = hi_from.hi_text;
      if (!r.hi_inf && r.lo >= r.hi) continue;
      r.point = (x.point && x.lo == r.lo && !r.hi_inf && x.hi == r.hi) ||
                (y.point && y.lo == r.lo && !r.hi_inf && y.hi == r.hi);
      out.push_back(std::move(r));
    }
  }
  std::sort(out.begin(), out.end(), [](const VRange& p, const VRange& q) { return p.lo < q.lo; });
  return out;
}

// True when every range of `inner` lies inside some range of `outer`.
bool Contains(const RangeSet& outer, const RangeSet& inner) {
  for (const VRange& r : inner) {
    bool inside = false;
    for (const VRange& o : outer) {
      if (o.lo <= r.lo && !Less(o.hi, o.hi_inf, r.hi, r.hi_inf)) {
        inside = true;
        break;
      }
    }
    if (!inside) return false;
  }
  return true;
}

bool MayHoldNull(const RangeSet& set) { return !Intersect(set, RangeSet{NullRange()}).empty(); }

void AddClauses(const char* key, const bson_value_t& value, Predicates* out, int depth);

void AddDocument(const bson_t* doc, Predicates* out, int depth) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) {
    out->only_paths = false;
    return;
  }
  while (bson_iter_next(&it)) AddClauses(bson_iter_key(&it), *bson_iter_value(&it), out, depth);
  if (it.err_off != 0) out->only_paths = false;
}

void AddClauses(const char* key, const bson_value_t& value, Predicates* out, int depth) {
  if (key[0] == '$') out->only_paths = false;
  if (std::strcmp(key, "$and") == 0) {
    if (depth > 20 || value.value_type != BSON_TYPE_ARRAY) return;
    ForEachElement(value, [&](const char*, const bson_value_t& branch) {
      if (branch.value_type != BSON_TYPE_DOCUMENT) return;
      ForEachElement(branch, [&](const char* k, const bson_value_t& v) { AddClauses(k, v, out, depth + 1); });
    });
    return;
  }
  out->elements.push_back(Element{key, value});
  if (std::strcmp(key, "$or") == 0) {
    if (value.value_type == BSON_TYPE_ARRAY) {
      out->or_array = value;
      ++out->or_count;
    }
    return;
  }
  if (key[0] == '$') return;  // $nor, $expr, $where, ...: no bounds
  std::vector<Clause>& clauses = out->Get(key);
  if (value.value_type == BSON_TYPE_DOCUMENT) {
    bool operators = false, first = true;
    if (!ForEachElement(value, [&](const char* k, const bson_value_t&) {
          if (first) operators = k[0] == '$';
          first = false;
        })) {
      out->only_paths = false;
    }
    if (operators) {
      ForEachElement(value, [&](const char* k, const bson_value_t& v) { clauses.push_back(Clause{OpFromName(k), v}); });
      return;
    }
  }
  clauses.push_back(Clause{Op::kEq, value});
}

// The bounds of a path from its clauses; nullopt when unbounded.  `exact`
// (may be null): set when the bounds hold exactly the values every clause
// matches (each clause is exact and gives bounds, and all are intersected).
std::optional<RangeSet> PathRanges(const std::vector<Clause>& clauses, bool multikey, bool texts, bool desc,
                                   bool* exact) {
  std::optional<RangeSet> set;
  bool all_exact = !multikey;  // multikey: the first bounds alone (an array may match the others apart)
  for (const Clause& c : clauses) {
    bool clause_exact = false;
    std::optional<RangeSet> r = ClauseRanges(c, &clause_exact, texts, desc);
    all_exact = all_exact && clause_exact;
    if (!r) continue;
    if (!set) {
      set = std::move(r);
      if (multikey) break;
    } else {
      set = Intersect(*set, *r);
    }
  }
  if (exact != nullptr) *exact = all_exact && set.has_value();
  return set;
}

bool SameElement(const Element& a, const Element& b) {
  return std::strcmp(a.key, b.key) == 0 && a.value.value_type == b.value.value_type &&
         CompareValues(a.value, b.value) == 0;
}

// True when every document the filter matches satisfies the partial filter.
bool Implies(const Predicates& filter, const bson_t* partial) {
  Predicates p;
  AddDocument(partial, &p, 0);
  for (const Element& pe : p.elements) {
    bool found = false;
    for (const Element& fe : filter.elements) {
      if (SameElement(fe, pe)) {
        found = true;
        break;
      }
    }
    if (found) continue;
    const char* key = pe.key;
    if (key[0] == '$') return false;  // a $or not in the filter as such
    // Each clause of the element must follow from one clause of the filter.
    std::vector<Clause> partial_clauses;
    {
      Predicates one;
      AddClauses(pe.key, pe.value, &one, 0);
      partial_clauses = one.Get(key);
    }
    const std::vector<Clause>* filter_clauses = filter.Find(key);
    if (filter_clauses == nullptr) return false;
    for (const Clause& pc : partial_clauses) {
      bool implied = false;
      if (pc.op == Op::kExists) {
        // $exists: true holds when a filter clause excludes missing (null) values.
        for (const Clause& fc : *filter_clauses) {
          std::optional<RangeSet> fr = ClauseRanges(fc, nullptr, false, false);
          if (fr && !MayHoldNull(*fr)) implied = true;
        }
      } else {
        bool exact = false;
        std::optional<RangeSet> pr = ClauseRanges(pc, &exact, false, false);
        if (pr && exact) {
          for (const Clause& fc : *filter_clauses) {
            std::optional<RangeSet> fr = ClauseRanges(fc, nullptr, false, false);
            if (fr && Contains(*pr, *fr)) implied = true;
          }
        }
      }
      if (!implied) return false;
    }
  }
  return true;
}

struct SortField {
  std::string path;
  bool descending;
};

bool ParseSort(const bson_t* sort, std::vector<SortField>* out) {
  if (sort == nullptr) return true;
  bson_iter_t it;
  if (!bson_iter_init(&it, sort)) return false;
  while (bson_iter_next(&it)) {
    if (!BSON_ITER_HOLDS_NUMBER(&it)) return false;  // {$meta: ...}
    out->push_back(SortField{bson_iter_key(&it), bson_iter_as_double(&it) < 0});
  }
  return true;
}

// An interval's endpoint as the other end shows it: "[6" <-> "6]",
// "(6" <-> "6)".
std::string FlipEndpoint(const std::string& text, bool was_low) {
  if (text.empty()) return text;
  if (was_low) {
    const char bracket = text.front() == '(' ? ')' : ']';
    return text.substr(1) + bracket;
  }
  const char bracket = text.back() == ')' ? '(' : '[';
  return bracket + text.substr(0, text.size() - 1);
}

// explain's indexBounds: each field's intervals in the order the scan meets
// them, as MongoDB shows them (a descending field scanned forward, or an
// ascending one scanned backward, lists its intervals from high to low,
// each written high end first: "[inf.0, 6]", "[MaxKey, MinKey]").
Document ExplainBounds(const IndexSpec& index, const std::vector<std::optional<RangeSet>>& sets, bool reverse) {
  const RangeSet everything{Everything()};
  bson_t* bounds = bson_new();
  for (size_t i = 0; i < index.fields.size(); ++i) {
    bson_t arr;
    bson_append_array_begin(bounds, index.fields[i].path.c_str(), -1, &arr);
    const RangeSet& shown = sets[i] ? *sets[i] : everything;
    const bool high_first = index.fields[i].descending != reverse;
    for (size_t k = 0; k < shown.size(); ++k) {
      const VRange& r = shown[high_first ? shown.size() - 1 - k : k];
      std::string text = high_first ? FlipEndpoint(r.hi_text, false) + ", " + FlipEndpoint(r.lo_text, true)
                                    : r.lo_text + ", " + r.hi_text;
      BSON_APPEND_UTF8(&arr, std::to_string(k).c_str(), text.c_str());
    }
    bson_append_array_end(bounds, &arr);
  }
  return Document::Adopt(bounds);
}

// Builds the scan of `index` from the path bounds.
IndexScan BuildScan(uint32_t collection_id, const Predicates& preds, const std::vector<SortField>& sort,
                    const IndexSpec& index, bool explain) {
  IndexScan scan;
  scan.index = &index;
  std::vector<std::optional<RangeSet>> sets;
  std::vector<bool> exact_sets;
  sets.reserve(index.fields.size());
  exact_sets.reserve(index.fields.size());
  for (const IndexField& f : index.fields) {
    const std::vector<Clause>* clauses = preds.Find(f.path);
    bool exact = false;
    sets.push_back(clauses == nullptr ? std::nullopt
                                      : PathRanges(*clauses, index.multikey, explain, f.descending, &exact));
    exact_sets.push_back(exact);
  }
  for (const auto& set : sets) {
    if (set) ++scan.bounded_fields;
  }
  scan.leading_bounded = !sets.empty() && sets[0].has_value();
  std::vector<std::string> prefixes{IndexPrefix(collection_id, index.id)};
  std::vector<KeyRange> ranges;
  bool ranged = false;
  size_t single_points = 0;  // leading fields bounded to one point
  size_t applied = 0;        // leading fields whose bounds the key ranges hold
  bool counting_points = true;
  for (size_t i = 0; i < index.fields.size() && !ranged; ++i) {
    if (!sets[i]) break;
    applied = i + 1;
    const RangeSet& set = *sets[i];
    const bool desc = index.fields[i].descending;
    bool all_points = std::all_of(set.begin(), set.end(), [](const VRange& r) { return r.point; });
    if (all_points && prefixes.size() * set.size() <= 1000) {
      if (counting_points && set.size() == 1) {
        ++single_points;
      } else {
        counting_points = false;
      }
      if (set.size() == 1) {  // one point: extend every prefix in place
        for (std::string& p : prefixes) p += desc ? set[0].desc_lo : set[0].lo;
        continue;
      }
      std::vector<std::string> next;
      next.reserve(prefixes.size() * set.size());
      for (const std::string& p : prefixes) {
        for (const VRange& r : set) next.push_back(p + (desc ? r.desc_lo : r.lo));
      }
      prefixes = std::move(next);
      continue;
    }
    counting_points = false;
    ranged = true;
    for (const std::string& p : prefixes) {
      for (const VRange& r : set) {
        KeyRange k;
        // p + kAfterValue: after every key that starts with p's components
        // (a component never starts with 0xFF).
        if (!desc) {
          k.start = p + r.lo;
          k.end = r.hi_inf ? After(p) : p + r.hi;
        } else {
          k.start = r.hi_inf ? p : p + r.desc_lo;
          k.end = r.lo.empty() ? After(p) : p + r.desc_hi;
        }
        if (k.start < k.end) ranges.push_back(std::move(k));
      }
    }
  }
  if (!ranged) {
    // Every key whose leading components are these points: [p, p + 0xFF)
    // (a decimal just above the last point starts with p + 0xFF).
    ranges.reserve(prefixes.size());
    for (std::string& p : prefixes) {
      std::string end = After(p);
      ranges.push_back(KeyRange{std::move(p), std::move(end)});
    }
    // Points on every field of a unique index: each prefix is a whole key.
    scan.point_keys = index.unique && std::all_of(sets.begin(), sets.end(), [](const std::optional<RangeSet>& set) {
      return set && std::all_of(set->begin(), set->end(), [](const VRange& r) { return r.point; });
    });
  }
  // Exact: every path of the filter is an index field whose bounds the
  // ranges hold, each exactly its clauses' matches; then every entry in
  // range names a matching document and none is missed.
  scan.exact = preds.only_paths && !index.multikey && !preds.paths.empty();
  for (const PathClauses& p : preds.paths) {
    if (!scan.exact) break;
    bool found = false;
    for (size_t i = 0; i < applied; ++i) {
      if (index.fields[i].path == p.path) found = exact_sets[i];
    }
    scan.exact = found;
  }
  std::sort(ranges.begin(), ranges.end(), [](const KeyRange& a, const KeyRange& b) { return a.start < b.start; });
  for (KeyRange& r : ranges) {
    if (!scan.ranges.empty() && r.start <= scan.ranges.back().end) {
      if (r.end > scan.ranges.back().end) scan.ranges.back().end = r.end;
      continue;
    }
    scan.ranges.push_back(std::move(r));
  }

  // The sort: index fields [j, j + n) with j within the single-point run.
  if (!sort.empty() && !index.multikey) {
    for (size_t j = 0; j <= single_points && j + sort.size() <= index.fields.size(); ++j) {
      bool forward = true, backward = true;
      for (size_t s = 0; s < sort.size(); ++s) {
        const IndexField& f = index.fields[j + s];
        if (f.path != sort[s].path) {
          forward = backward = false;
          break;
        }
        if (f.descending != sort[s].descending) forward = false;
        if (f.descending == sort[s].descending) backward = false;
      }
      if (forward || backward) {
        // A $in (several points) before the sort fields breaks the order.
        bool points_only_before = true;
        for (size_t b = 0; b < j; ++b) {
          if (!sets[b] || sets[b]->size() != 1 || !(*sets[b])[0].point) points_only_before = false;
        }
        if (!points_only_before) continue;
        scan.provides_sort = true;
        scan.reverse = backward;
        break;
      }
    }
  }
  if (explain) scan.bounds = ExplainBounds(index, sets, scan.reverse);
  return scan;
}

// Whether `index` may answer a query with these predicates at all.
bool Usable(const IndexScan& scan, const Predicates& preds) {
  const IndexSpec& index = *scan.index;
  if (!index.ready) return false;
  if (index.sparse) {
    bool excludes_missing = false;
    for (const IndexField& f : index.fields) {
      const std::vector<Clause>* clauses = preds.Find(f.path);
      if (clauses == nullptr) continue;
      std::optional<RangeSet> set = PathRanges(*clauses, false, false, false, nullptr);
      if (set && !MayHoldNull(*set)) excludes_missing = true;
    }
    if (!excludes_missing) return false;
  }
  if (index.has_partial_filter() && !Implies(preds, index.partial_filter.bson())) return false;
  return true;
}

std::vector<IndexScan> Candidates(uint32_t collection_id, const Predicates& preds, const std::vector<SortField>& sort,
                                  const std::vector<const IndexSpec*>& indexes, bool explain) {
  std::vector<IndexScan> out;
  for (const IndexSpec* index : indexes) {
    if (!index->ready) continue;
    // Cheap pre-check: with no bound on the first field, only the sort can
    // make an index worth scanning.
    if (sort.empty() && preds.Find(index->fields[0].path) == nullptr) continue;
    IndexScan scan = BuildScan(collection_id, preds, sort, *index, explain);
    if (!scan.leading_bounded && !scan.provides_sort) continue;
    // A sort-only scan must cover every document: every one has a key.
    if (!Usable(scan, preds)) continue;
    out.push_back(std::move(scan));
  }
  return out;
}

}  // namespace

bool PlainFilter(const bson_t* filter) {
  bson_iter_t it;
  if (filter == nullptr || !bson_iter_init(&it, filter)) return false;
  while (bson_iter_next(&it)) {
    const char* path = bson_iter_key(&it);
    if (path[0] == '$' || path[0] == '\0') return false;
    size_t dots = 0;
    for (const char* c = path; *c != '\0'; ++c) dots += *c == '.';
    if (dots >= 100) return false;
    const bson_value_t& v = *bson_iter_value(&it);
    // A value, {} included, is an equality; an operator document is its
    // clauses (a name without '$' among them: an equality to a document).
    if (v.value_type != BSON_TYPE_DOCUMENT || v.value.v_doc.data_len <= 5) {
      if (!PlainClause(Clause{Op::kEq, v})) return false;
      continue;
    }
    bool plain = true;
    const bool whole = ForEachElement(
        v, [&](const char* k, const bson_value_t& arg) { plain = plain && PlainClause(Clause{OpFromName(k), arg}); });
    if (!whole || !plain) return false;
  }
  return it.err_off == 0;
}

StatusOr<Hint> ParseHint(const bson_value_t& v) {
  Hint hint;
  if (v.value_type == BSON_TYPE_UTF8) {
    hint.name.assign(v.value.v_utf8.str, v.value.v_utf8.len);
    return hint;
  }
  if (v.value_type == BSON_TYPE_DOCUMENT) {
    StatusOr<Document> d = Document::FromBytes(v.value.v_doc.data, v.value.v_doc.data_len);
    if (!d.ok()) return d.status();
    bson_iter_t it;
    if (bson_iter_init(&it, d->bson()) && bson_iter_next(&it) && std::strcmp(bson_iter_key(&it), "$natural") == 0) {
      hint.natural = true;
      return hint;
    }
    hint.key = std::move(*d);
    return hint;
  }
  return Status(ErrorCode::kBadValue, "hint must be a string or an object");
}

StatusOr<const IndexSpec*> ResolveHint(const Hint& hint, const std::vector<const IndexSpec*>& indexes) {
  for (const IndexSpec* index : indexes) {
    if (!index->ready) continue;
    if (!hint.name.empty() ? index->name == hint.name
                           : CompareDocuments(index->key.bson(), hint.key.bson()) == 0) {
      return index;
    }
  }
  bool id_index = hint.name == kIdIndexName;
  if (!hint.key.empty()) {
    bson_iter_t it;
    id_index = bson_iter_init(&it, hint.key.bson()) && bson_iter_next(&it) &&
               std::strcmp(bson_iter_key(&it), "_id") == 0 && !bson_iter_next(&it);
  }
  if (id_index) return static_cast<const IndexSpec*>(nullptr);  // the _id order: a collection scan
  return Status(ErrorCode::kBadValue,
                "error processing query: planner returned error :: caused by :: hint provided does not "
                "correspond to an existing index");
}

PlanCandidates PlanQuery(uint32_t collection_id, const bson_t* filter, const bson_t* sort,
                         const std::vector<const IndexSpec*>& indexes, bool explain) {
  PlanCandidates out;
  if (indexes.empty()) return out;
  Predicates preds;
  AddDocument(filter, &preds, 0);
  std::vector<SortField> sort_fields;
  if (!ParseSort(sort, &sort_fields)) sort_fields.clear();
  out.single = Candidates(collection_id, preds, sort_fields, indexes, explain);

  if (preds.or_count == 1) {
    std::vector<std::vector<IndexScan>> per_branch;
    bool every_branch = true;
    ForEachElement(preds.or_array, [&](const char*, const bson_value_t& branch_value) {
      if (!every_branch) return;
      if (branch_value.value_type != BSON_TYPE_DOCUMENT) {
        every_branch = false;
        return;
      }
      // The branch's own predicates and those ANDed beside the $or.
      Predicates bp;
      ForEachElement(branch_value, [&](const char* k, const bson_value_t& v) { AddClauses(k, v, &bp, 0); });
      for (const Element& e : preds.elements) {
        if (std::strcmp(e.key, "$or") == 0) continue;
        AddClauses(e.key, e.value, &bp, 0);
      }
      std::vector<IndexScan> scans = Candidates(collection_id, bp, {}, indexes, explain);
      if (scans.empty()) {  // one branch needs a collection scan: so does the $or
        every_branch = false;
        return;
      }
      for (IndexScan& s : scans) s.provides_sort = false;
      per_branch.push_back(std::move(scans));
    });
    if (!every_branch) return out;
    if (!per_branch.empty()) out.or_branches = std::move(per_branch);
  }
  return out;
}

IndexScan ScanForIndex(uint32_t collection_id, const bson_t* filter, const bson_t* sort, const IndexSpec& index,
                       bool explain) {
  Predicates preds;
  AddDocument(filter, &preds, 0);
  std::vector<SortField> sort_fields;
  if (!ParseSort(sort, &sort_fields)) sort_fields.clear();
  return BuildScan(collection_id, preds, sort_fields, index, explain);
}

}  // namespace index
}  // namespace gatedb
