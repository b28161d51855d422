"""IEEE 754-2008 decimal128 in its binary integer decimal (BID) encoding,
BSON's Decimal128, converted to and from decimal.Decimal exactly.

Layout of the 128 bits (little-endian on the wire, as two uint64: low, high):
sign (bit 127), then either a 14-bit biased exponent (bits 113-126) and a
113-bit coefficient, or, when bits 125-126 are both set, the "11" form
(Infinity, NaN, or a coefficient over 10^34, which is non-canonical and
reads as zero).  Exponents run from -6176 to 6111 (bias 6176); coefficients
hold at most 34 decimal digits.
"""

import decimal
import struct

_QQ = struct.Struct("<QQ")
_BIAS = 6176
_EXP_MAX = 6111
_EXP_MIN = -6176
_MAX_DIGITS = 34
_MAX_COEFFICIENT = 10 ** _MAX_DIGITS
_SIGN = 1 << 63
_INF = 0x7800 << 48
_NAN = 0x7C00 << 48
_SNAN = 0x7E00 << 48


def decimal_to_bid(value):
    """The 16 BID bytes of a decimal.Decimal; ValueError when it cannot be
    held exactly (more than 34 digits, or an exponent out of range even
    after moving trailing zeros).  A too-large exponent is clamped by adding
    zeros to the coefficient, as IEEE 754 and libbson do ("1E+6144" becomes
    1000000000000000000000000000000000E+6111)."""
    sign, digits, exponent = value.as_tuple()
    high_sign = _SIGN if sign else 0
    if value.is_nan():
        return _QQ.pack(0, high_sign | (_SNAN if value.is_snan() else _NAN))
    if value.is_infinite():
        return _QQ.pack(0, high_sign | _INF)
    coefficient = int("".join(map(str, digits))) if digits else 0
    n_digits = len(str(coefficient))
    if coefficient == 0:
        exponent = max(_EXP_MIN, min(_EXP_MAX, exponent))
    while exponent > _EXP_MAX and n_digits < _MAX_DIGITS:
        coefficient *= 10
        exponent -= 1
        n_digits += 1
    while exponent < _EXP_MIN and coefficient % 10 == 0:
        coefficient //= 10
        exponent += 1
        n_digits -= 1
    if exponent > _EXP_MAX or exponent < _EXP_MIN or coefficient >= _MAX_COEFFICIENT:
        raise ValueError("%s cannot be represented exactly as a Decimal128" % value)
    high = high_sign | ((exponent + _BIAS) << 49) | (coefficient >> 64)
    return _QQ.pack(coefficient & 0xFFFFFFFFFFFFFFFF, high)


def bid_to_decimal(bid):
    """The exact decimal.Decimal of 16 BID bytes."""
    low, high = _QQ.unpack(bid)
    sign = high >> 63
    if (high >> 61) & 3 == 3:
        combination = (high >> 58) & 0x1F
        if combination == 0x1E:
            return decimal.Decimal("-Infinity" if sign else "Infinity")
        if combination == 0x1F:
            return decimal.Decimal(("-" if sign else "") + ("sNaN" if (high >> 57) & 1 else "NaN"))
        exponent = ((high >> 47) & 0x3FFF) - _BIAS
        coefficient = 0  # the "11" form's coefficient is >= 2^113 > 10^34: non-canonical, zero
    else:
        exponent = ((high >> 49) & 0x3FFF) - _BIAS
        coefficient = ((high & 0x1FFFFFFFFFFFF) << 64) | low
        if coefficient >= _MAX_COEFFICIENT:
            coefficient = 0
    return decimal.Decimal((sign, tuple(map(int, str(coefficient))), exponent))
