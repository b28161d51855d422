// File: engine/update/update_internal.h
//
// Internals of UpdateDriver, shared by the files of engine/update only:
//  - Op: one parsed (path, operator, operand), in update_driver.cc's order;
//  - UpdateNode: the ops as a prefix tree of paths (MongoDB's UpdateNode
//    tree), whose sorted children give the order in which ops apply;
//  - MNode / ApplyState: the target document as a lazily expanded mutable
//    tree.  Only containers on touched paths are expanded; everything else
//    stays a borrowed bson_value_t and is copied byte for byte on output;
//  - the operator families: field_ops.cc ($set $unset $min $max
//    $currentDate $setOnInsert $rename), arith_ops.cc ($inc $mul $bit),
//    array_ops.cc ($push $addToSet $pull $pullAll $pop).
//
// Thread safety: Op and UpdateNode are immutable after Parse(); an
// ApplyState belongs to one Apply() call.
#ifndef GATEDB_ENGINE_UPDATE_UPDATE_INTERNAL_H_
#define GATEDB_ENGINE_UPDATE_UPDATE_INTERNAL_H_

#include <bson/bson.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/query/matcher.h"
#include "gatedb/status.h"

namespace gatedb {
namespace update {
namespace internal {

// bson_value_t / bson_t for use as template arguments: libbson's typedefs
// carry an alignment attribute that GCC warns about dropping there
// (-Wignored-attributes); the structs they name have the same layout.
using BValue = struct _bson_value_t;
using BsonPtr = struct _bson_t*;

// MongoDB's limits.
constexpr int kMaxDepth = 100;               // BSONDepth::getMaxDepthForUserStorage()
constexpr int kMaxPathParts = 200;           // gatedb: bounds recursion on hostile paths
constexpr size_t kMaxPaddingAllowed = 1500000;  // pathsupport::kMaxPaddingAllowed
constexpr size_t kMaxDocumentSize = 16 * 1024 * 1024;

enum class OpType {
  kSet,
  kUnset,
  kInc,
  kMul,
  kMin,
  kMax,
  kRename,
  kCurrentDate,
  kSetOnInsert,
  kPush,
  kAddToSet,
  kPull,
  kPullAll,
  kPop,
  kBit,
};

// "$set", "$inc", ...
const char* OpName(OpType type);

// True for operators that create a missing path ($set, $inc, $push, ...);
// false for $unset $pull $pullAll $pop, which leave a missing path alone.
bool CreatesPath(OpType type);

enum class PullKind {
  kEquality,  // {$pull: {a: 5}}: elements equal to the value
  kObject,    // {$pull: {a: {x: 1}}}: document elements matching the query
  kWrapped,   // {$pull: {a: {$gte: 5}}} or a regex: each element vs the condition
};

enum class BitOp { kAnd, kOr, kXor };

struct SortField {
  std::vector<std::string> parts;
  int direction;  // 1 or -1
};

struct Op {
  Op() = default;
  ~Op();
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  OpType type = OpType::kSet;
  std::string path;                // as written; for $rename the destination
  std::vector<std::string> parts;  // `path` split at '.'
  std::string field_name;          // the operand's field name, as written
  bson_value_t operand{};          // borrowed from the driver's copy of the update

  // $rename: the source.
  std::string from_path;
  std::vector<std::string> from_parts;

  // $push, $addToSet: the values to insert ($addToSet: deduplicated).
  std::vector<BValue> values;
  // $push modifiers.
  bool has_position = false;
  int64_t position = 0;
  bool has_slice = false;
  int64_t slice = 0;
  enum class SortKind { kNone, kWhole, kFields } sort_kind = SortKind::kNone;
  int sort_direction = 1;              // kWhole
  std::vector<SortField> sort_fields;  // kFields

  // $pull.
  PullKind pull_kind = PullKind::kEquality;
  bson_t* pull_filter = nullptr;  // owned; the filter `matcher` was parsed from
  std::unique_ptr<query::Matcher> matcher;

  // $pop.
  bool pop_front = false;

  // $currentDate.
  bool date_type = true;  // false: Timestamp

  // $bit.
  std::vector<std::pair<BitOp, BValue>> bit_ops;
};

// Orders sibling field names as MongoDB 5.0+ applies them: two numeric names
// by numeric value (shorter first), anything else bytewise.
struct FieldNameLess {
  bool operator()(const std::string& a, const std::string& b) const;
};

// One node of the prefix tree of update paths.
struct UpdateNode {
  enum class Kind {
    kObject,  // children by field name (the root is one)
    kArray,   // a single child under "" applied to every element (`$[]`)
    kLeaf,    // an operator; op == nullptr for a placeholder ($rename source,
              // the absorbed version $inc) that only claims the path
  };
  explicit UpdateNode(Kind k) : kind(k) {}
  Kind kind;
  std::map<std::string, std::unique_ptr<UpdateNode>, FieldNameLess> children;
  const Op* op = nullptr;
};

// Which messages a conflict reports: at parse time MongoDB says "Updating
// the path 'a.b' would create a conflict at 'a'"; when `$` resolves onto
// another path at apply time, "Update created a conflict at 'a.1'".
enum class ConflictStyle { kParse, kApply };

// Adds `parts` (with `$[]` components) to the tree under `root`, ending in a
// leaf for `op` (null for a placeholder).  Errors: ConflictingUpdateOperators.
Status InsertPath(UpdateNode* root, const std::vector<std::string>& parts, const Op* op,
                  ConflictStyle style);

bool IsPositional(std::string_view part);    // "$"
bool IsArrayFilter(std::string_view part);   // "$[...]"
// Parses an array index ("0", "12"); false for anything else.
bool ParseIndex(std::string_view part, size_t* index);

// ---------------------------------------------------------------------------
// The mutable document.

struct MNode;

struct MChild {
  std::string_view name;  // unused in arrays; points into stable storage
  MNode* node;
};

struct MNode {
  enum class Kind : uint8_t {
    kValue,  // `value`: a scalar, or a not yet expanded document/array
    kDoc,    // expanded document: `children`
    kArray,  // expanded array: `children`
  };
  Kind kind = Kind::kValue;
  // The node came from the original document at the same depth, so its
  // nesting needs no re-check on output.
  bool trusted = false;
  bson_value_t value{};  // borrowed bytes (document, update, or ApplyState)
  std::vector<MChild> children;
  // A top-level field of the original document that no operator changed:
  // its whole element (type, name, value) in the original's bytes, copied
  // as one block on output.  Cleared by any change to the node.
  const uint8_t* raw = nullptr;
  uint32_t raw_len = 0;

  bool IsDocLike() const;    // a document, expanded or not
  bool IsArrayLike() const;  // an array, expanded or not
  bson_type_t type() const;
  void SetValue(const bson_value_t& v, bool trusted_value);
};

// State for one Apply() call: owns the nodes and any bytes they borrow.
class ApplyState {
 public:
  ApplyState(const bson_t* doc, int64_t now_millis, bool is_insert);
  ~ApplyState();
  ApplyState(const ApplyState&) = delete;
  ApplyState& operator=(const ApplyState&) = delete;

  MNode* root() { return root_; }
  int64_t now_millis() const { return now_millis_; }
  bool is_insert() const { return is_insert_; }

  MNode* NewNode();
  MNode* NewValueNode(const bson_value_t& v);
  MNode* NewNullNode();
  // A copy of `n` (sharing children) for moving a subtree, never trusted.
  MNode* CloneShallow(const MNode* n);
  // Stable storage for a name made at apply time (array indexes).
  std::string_view Intern(std::string s);

  // Turns an unexpanded document/array into kDoc/kArray.  No-op otherwise.
  void Expand(MNode* n);
  // The child `name` of a document, or the element at index `name` of an
  // array; null when absent or `n` is a scalar.
  MNode* Lookup(MNode* n, std::string_view name);
  // The node's current value; expanded nodes are serialized into storage
  // owned by this state.
  bson_value_t ValueOf(MNode* n);

  // "_id: 1" from the current root, or "no id".
  std::string IdElementString();

  // Writes `n`'s children to `out` (a document or array being built),
  // checking the nesting limit.  `level` is the depth of the children.
  // Errors: Overflow, BSONObjectTooLarge.
  Status AppendChildren(MNode* n, bson_t* out, int level);
  // The root's children as a whole document into `out`: the unchanged
  // top-level fields of the original are copied as byte blocks, the others
  // appended as AppendChildren would (it is used when `out` is not empty).
  // The bytes are AppendChildren's.  `child_offsets`, when given, receives
  // the offset in `out` of each root child's element, in the children's
  // order (left empty when `out` was not empty).  Errors: those of
  // AppendChildren.
  Status AppendRoot(bson_t* out, std::vector<uint32_t>* child_offsets = nullptr);

 private:
  // Whether `c` (a child of the root) can be copied from the original.
  static bool RawUsable(const MChild& c);
  Status AppendNode(bson_t* out, std::string_view key, MNode* n, int level);

  std::deque<MNode> arena_;
  std::deque<std::string> names_;
  std::vector<BsonPtr> buffers_;
  MNode* root_ = nullptr;
  int64_t now_millis_;
  bool is_insert_;
  uint32_t source_len_ = 0;  // the original document's size
};

// Where the apply walk stands: chain[0] is the root and chain[i] the node
// reached by path[0..i).  When chain.size() <= path.size(), the components
// path[chain.size() - 1 ..] do not exist yet ("pathToCreate").
struct Cursor {
  std::vector<MNode*> chain;
  std::vector<std::string_view> path;

  bool exists() const { return chain.size() == path.size() + 1; }
  MNode* node() const { return chain.back(); }  // deepest existing node
  MNode* parent() const { return chain.size() >= 2 ? chain[chain.size() - 2] : nullptr; }
  std::string Dotted() const;
  std::string DottedPrefix(size_t n) const;
};

// ---------------------------------------------------------------------------
// Messages.

// MongoDB's typeName(): "double", "string", "object", "array", "int", ...
const char* TypeName(bson_type_t type);
// MongoDB's BSONElement::toString() of a value, e.g. { a: 1, b: "x" }.
std::string FormatValue(const bson_value_t& v);
// "name: value".
std::string FormatElement(std::string_view name, const bson_value_t& v);
std::string JoinPath(const std::vector<std::string>& parts, size_t begin, size_t end);

// Numeric helpers shared by the operator families.
bson_value_t Int32Value(int32_t v);
bson_value_t Int64Value(int64_t v);
bson_value_t DoubleValue(double v);
// MatchExpressionParser::parseIntegerElementToLong.  Errors: FailedToParse.
Status ParseIntegerToLong(std::string_view name, const bson_value_t& v, int64_t* out);
// True when the two values hold the same type and bytes (BSON identity).
bool ValuesIdentical(const bson_value_t& a, const bson_value_t& b);
// Max nesting below a document/array value whose own children sit at
// `level`; false when some field lies deeper than kMaxDepth.
bool DepthWithin(const bson_value_t& v, int level);

// ---------------------------------------------------------------------------
// Operator families.  Init*: parse the operand (op->type, path, operand set).
// Apply*: apply to the existing node at c (c.exists()).  NewValue*: the
// value a missing path is created with (only for CreatesPath types).

Status InitFieldOp(Op* op);
Status InitArithOp(Op* op);
Status InitArrayOp(Op* op);

Status ApplyFieldOp(const Op& op, ApplyState* st, Cursor* c);
Status ApplyArithOp(const Op& op, ApplyState* st, Cursor* c);
// $inc or $mul of `current`, as ApplyArithOp computes it; false where
// ApplyArithOp fails (a current value that is not a number, an int64
// overflow) or for $bit.
bool ArithResult(const Op& op, const bson_value_t& current, bson_value_t* result);
Status ApplyArrayOp(const Op& op, ApplyState* st, Cursor* c);

StatusOr<MNode*> NewFieldValue(const Op& op, ApplyState* st);
StatusOr<MNode*> NewArithValue(const Op& op, ApplyState* st);
StatusOr<MNode*> NewArrayValue(const Op& op, ApplyState* st);

// $rename at its destination `c`.
Status ApplyRename(const Op& op, ApplyState* st, Cursor* c);

// The field name of array index `i` (stable for the state's lifetime).
std::string_view IndexName(ApplyState* st, size_t i);

// Creates the missing components of `c` with `leaf` as the last one.
// Errors: PathNotViable, BadValue (padding limit).
Status CreatePath(ApplyState* st, Cursor* c, MNode* leaf);

}  // namespace internal
}  // namespace update
}  // namespace gatedb

#endif  // GATEDB_ENGINE_UPDATE_UPDATE_INTERNAL_H_
