// File: engine/document/bson_compare.h
//
// MongoDB's BSON comparison order (no collation): values compare first by
// the canonical rank of their type, then by value within the rank.  Numbers
// (int32, int64, double, decimal128) share one rank and compare by value,
// exactly (a decimal against anything through engine/decimal/decimal128.h:
// 9999999999999999999999999999999999 > ...998, NumberDecimal("0.1") <
// the double 0.1); NaN equals NaN and sorts below every other number.  Strings and symbols
// compare bytewise.  Documents and arrays compare element by element: type
// rank, then field name, then value; a shorter prefix sorts first.
//
// This is the order of find's sort, of $gt/$lt, and of the _id key encoding
// (engine/keys), which must agree with it exactly.
#ifndef GATEDB_ENGINE_DOCUMENT_BSON_COMPARE_H_
#define GATEDB_ENGINE_DOCUMENT_BSON_COMPARE_H_

#include <bson/bson.h>

namespace gatedb {

// MongoDB's canonicalizeBSONType: MinKey -1, undefined 0, null 5, numbers 10,
// string/symbol 15, object 20, array 25, binary 30, ObjectId 35, bool 40,
// date 45, timestamp 47, regex 50, dbpointer 55, code 60, code w/ scope 65,
// MaxKey 127.  EOO (a missing value) ranks with null.
int CanonicalTypeRank(bson_type_t type);

// MongoDB's name of a BSON type ("double", "string", "object", "array",
// "int", "long", "decimal", ...; "missing" for EOO), as error messages and
// $type aliases use it.
const char* BsonTypeName(bson_type_t type);

// True for int32, int64, double and decimal128.
bool IsNumberType(bson_type_t type);

// A number's value as an 80-bit long double: exact for every int32, int64
// and double; decimal128 is rounded to 64 significant bits (and to 0 or
// infinity outside the long double range), so it must not decide the order
// or the equality of decimals: CompareValues and engine/decimal do, exactly.
// REQUIRES: IsNumberType(v.value_type).
long double NumberAsLongDouble(const bson_value_t& v);

// <0, 0, >0 as a sorts before, equal to, or after b.
int CompareValues(const bson_value_t& a, const bson_value_t& b);

// Compares two documents (or two arrays' bytes) element by element.
int CompareDocuments(const bson_t* a, const bson_t* b);

// Convenience: compares the values at two iterators.
int CompareIters(const bson_iter_t* a, const bson_iter_t* b);

}  // namespace gatedb

#endif  // GATEDB_ENGINE_DOCUMENT_BSON_COMPARE_H_
