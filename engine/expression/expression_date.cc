// Date operators: $year $month $dayOfMonth $dayOfWeek $dayOfYear $hour
// $minute $second $millisecond $week $isoWeek $isoWeekYear $isoDayOfWeek,
// $dateToString $dateFromString $dateToParts $dateFromParts $dateAdd
// $dateSubtract $dateDiff $dateTrunc.
//
// Calendar arithmetic goes through <ctime>'s timegm() and gmtime_r() (and
// strftime() for the ISO-week fields) on local time, that is the UTC
// milliseconds plus the time zone's offset.  Time zones: UTC (and its
// aliases) and fixed offsets ("+04:30", "-0530", "+03").  Olson names such
// as "America/New_York" need daylight-saving rules gatedb does not carry
// yet: they are refused with Location40485 and a message that says so.
#include <cerrno>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "engine/expression/expression_internal.h"

namespace gatedb {
namespace expression {
namespace internal {

namespace {

constexpr int64_t kMsPerSecond = 1000;
constexpr int64_t kMsPerMinute = 60 * kMsPerSecond;
constexpr int64_t kMsPerHour = 60 * kMsPerMinute;
constexpr int64_t kMsPerDay = 24 * kMsPerHour;

std::string T(const Value& v) { return TypeName(v); }

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// A date broken down in local time.
struct Parts {
  int64_t year = 1970;
  int month = 1;  // 1-12
  int day = 1;    // 1-31
  int hour = 0, minute = 0, second = 0, millisecond = 0;
  int wday = 4;  // 0 = Sunday
  int yday = 0;  // 0-365
  struct tm tm;
};

bool BreakDown(int64_t local_ms, Parts* p) {
  const int64_t secs = FloorDiv(local_ms, kMsPerSecond);
  p->millisecond = static_cast<int>(local_ms - secs * kMsPerSecond);
  const time_t t = static_cast<time_t>(secs);
  if (gmtime_r(&t, &p->tm) == nullptr) return false;
  p->year = int64_t{p->tm.tm_year} + 1900;
  p->month = p->tm.tm_mon + 1;
  p->day = p->tm.tm_mday;
  p->hour = p->tm.tm_hour;
  p->minute = p->tm.tm_min;
  p->second = p->tm.tm_sec;
  p->wday = p->tm.tm_wday;
  p->yday = p->tm.tm_yday;
  return true;
}

// A strftime() number field ("%V", "%G", "%U", "%u") of a broken-down date.
int64_t TmField(const struct tm& tm, const char* fmt) {
  char buf[32];
  if (std::strftime(buf, sizeof(buf), fmt, &tm) == 0) return 0;
  return std::strtoll(buf, nullptr, 10);
}

// Local midnight-based timegm() in ms of year/month/day h:m:s.ms; the fields
// may be out of range (timegm normalises them: month 13 is next January).
bool FromFields(int64_t year, int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second,
                int64_t millisecond, int64_t* local_ms) {
  // Fold months into years first: tm_mon is an int.
  year += FloorDiv(month - 1, 12);
  month = month - 1 - FloorDiv(month - 1, 12) * 12 + 1;
  if (year - 1900 < INT32_MIN || year - 1900 > INT32_MAX) return false;
  struct tm tm = {};
  tm.tm_year = static_cast<int>(year - 1900);
  tm.tm_mon = static_cast<int>(month - 1);
  tm.tm_mday = 1;
  errno = 0;
  const time_t base = timegm(&tm);
  if (base == static_cast<time_t>(-1) && errno != 0) return false;
  // Days, hours, ... are added as durations, which is what normalisation
  // means in a calendar without time zone transitions.
  int64_t ms = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(base), kMsPerSecond, &ms)) return false;
  int64_t add = 0, part = 0;
  if (__builtin_mul_overflow(day - 1, kMsPerDay, &part) || __builtin_add_overflow(add, part, &add)) return false;
  if (__builtin_mul_overflow(hour, kMsPerHour, &part) || __builtin_add_overflow(add, part, &add)) return false;
  if (__builtin_mul_overflow(minute, kMsPerMinute, &part) || __builtin_add_overflow(add, part, &add)) return false;
  if (__builtin_mul_overflow(second, kMsPerSecond, &part) || __builtin_add_overflow(add, part, &add)) return false;
  if (__builtin_add_overflow(add, millisecond, &add)) return false;
  return !__builtin_add_overflow(ms, add, local_ms);
}

int DaysInMonth(int64_t year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month != 2) return kDays[month - 1];
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return leap ? 29 : 28;
}

// ---------------------------------------------------------------------------
// Time zones

// The offset of `tz` in ms.  Errors: Location40517 for a non-string,
// Location40485 for an unknown or unsupported zone.
StatusOr<int64_t> ParseTimezone(const Value& tz) {
  if (!tz.is_string()) return Err(40517, "timezone must evaluate to a string, found " + T(tz));
  const std::string_view s = tz.str();
  static const char* const kUtc[] = {"UTC", "GMT", "Etc/UTC", "Etc/GMT", "Etc/Universal", "Universal",
                                     "Zulu", "Etc/Zulu", "UCT", "Etc/UCT", "Etc/Greenwich", "Greenwich",
                                     "GMT0", "Etc/GMT0", "GMT+0", "GMT-0", "Etc/GMT+0", "Etc/GMT-0"};
  for (const char* n : kUtc) {
    if (s == n) return int64_t{0};
  }
  // +hh, +hhmm, +hh:mm (and -)
  if (s.size() >= 3 && (s[0] == '+' || s[0] == '-')) {
    auto digit = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
    int hh = -1, mm = 0;
    if (digit(1) && digit(2)) {
      hh = (s[1] - '0') * 10 + (s[2] - '0');
      if (s.size() == 3) {
        mm = 0;
      } else if (s.size() == 5 && digit(3) && digit(4)) {
        mm = (s[3] - '0') * 10 + (s[4] - '0');
      } else if (s.size() == 6 && s[3] == ':' && digit(4) && digit(5)) {
        mm = (s[4] - '0') * 10 + (s[5] - '0');
      } else {
        hh = -1;
      }
    }
    if (hh >= 0 && hh <= 99 && mm <= 59) {
      const int64_t off = (int64_t{hh} * 60 + mm) * kMsPerMinute;
      return s[0] == '-' ? -off : off;
    }
  }
  return Err(40485, "unrecognized time zone identifier: \"" + std::string(s) +
                        "\" (gatedb supports UTC and fixed offsets such as \"+04:30\"; Olson time zones are not "
                        "supported yet)");
}

// Evaluates an optional timezone expression: the offset, 0 when absent;
// *null_result when it evaluates to null or missing.
StatusOr<int64_t> EvalTimezone(const Expression* tz, const EvalContext& ctx, bool* null_result) {
  if (tz == nullptr) return int64_t{0};
  ASSIGN_OR_RETURN(Value v, tz->Evaluate(ctx));
  if (v.nullish()) {
    *null_result = true;
    return int64_t{0};
  }
  return ParseTimezone(v);
}

// Offsets as %z ("+0430") and %Z ("+270") write them.
std::string OffsetHHMM(int64_t off_ms) {
  const int64_t minutes = off_ms / kMsPerMinute;
  const int64_t a = minutes < 0 ? -minutes : minutes;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%c%02lld%02lld", minutes < 0 ? '-' : '+', static_cast<long long>(a / 60),
                static_cast<long long>(a % 60));
  return buf;
}

std::string OffsetMinutes(int64_t off_ms) {
  const int64_t minutes = off_ms / kMsPerMinute;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%c%03lld", minutes < 0 ? '-' : '+',
                static_cast<long long>(minutes < 0 ? -minutes : minutes));
  return buf;
}

// ---------------------------------------------------------------------------
// Formatting

Status ValidateFormat(std::string_view f) {
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') continue;
    if (i + 1 == f.size()) return Err(18535, "Unmatched '%' at end of format string");
    const char c = f[++i];
    if (std::strchr("dGHjLmMSuUVwYzZ%", c) == nullptr) {
      return Err(18536, std::string("Invalid format character '%") + c + "' in format string");
    }
  }
  return Status::OK();
}

void Pad(std::string* out, int64_t v, int width) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%0*lld", width, static_cast<long long>(v));
  out->append(buf);
}

// REQUIRES: ValidateFormat(f).  Errors: Location18537 for a year outside
// 0-9999 under %Y or %G.
StatusOr<std::string> FormatDate(std::string_view f, int64_t utc_ms, int64_t off_ms) {
  Parts p;
  if (!BreakDown(utc_ms + off_ms, &p)) return Status(ErrorCode::kOverflow, "date out of range");
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%' || i + 1 >= f.size()) {
      out.push_back(f[i]);
      continue;
    }
    switch (f[++i]) {
      case 'Y':
      case 'G': {
        const int64_t y = f[i] == 'Y' ? p.year : TmField(p.tm, "%G");
        if (y < 0 || y > 9999) {
          return Err(18537, "Could not convert date to string: date component was outside the supported range of "
                            "0-9999: " + std::to_string(y));
        }
        Pad(&out, y, 4);
        break;
      }
      case 'm': Pad(&out, p.month, 2); break;
      case 'd': Pad(&out, p.day, 2); break;
      case 'H': Pad(&out, p.hour, 2); break;
      case 'M': Pad(&out, p.minute, 2); break;
      case 'S': Pad(&out, p.second, 2); break;
      case 'L': Pad(&out, p.millisecond, 3); break;
      case 'j': Pad(&out, p.yday + 1, 3); break;
      case 'w': Pad(&out, p.wday + 1, 1); break;
      case 'u': Pad(&out, TmField(p.tm, "%u"), 1); break;
      case 'U': Pad(&out, TmField(p.tm, "%U"), 2); break;
      case 'V': Pad(&out, TmField(p.tm, "%V"), 2); break;
      case 'z': out.append(OffsetHHMM(off_ms)); break;
      case 'Z': out.append(OffsetMinutes(off_ms)); break;
      case '%': out.push_back('%'); break;
      default: break;
    }
    if (out.size() > kMaxValueBytes) {
      return Status(ErrorCode::kBSONObjectTooLarge, "$dateToString would produce a string larger than " +
                                                        std::to_string(kMaxValueBytes) + " bytes");
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Parsing date strings

// Reads exactly `n` digits at s[*i].
bool Digits(std::string_view s, size_t* i, size_t n, int64_t* out) {
  if (*i + n > s.size()) return false;
  int64_t v = 0;
  for (size_t k = 0; k < n; ++k) {
    const char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

// A zone suffix at s[*i]: "Z", "+hh", "+hhmm", "+hh:mm".
bool ZoneSuffix(std::string_view s, size_t* i, int64_t* off_ms) {
  if (*i < s.size() && s[*i] == 'Z') {
    ++*i;
    *off_ms = 0;
    return true;
  }
  if (*i >= s.size() || (s[*i] != '+' && s[*i] != '-')) return false;
  const bool neg = s[*i] == '-';
  ++*i;
  int64_t hh = 0, mm = 0;
  if (!Digits(s, i, 2, &hh)) return false;
  if (*i < s.size() && s[*i] == ':') ++*i;
  if (*i < s.size()) {
    if (!Digits(s, i, 2, &mm)) return false;
  }
  if (mm > 59) return false;
  *off_ms = (neg ? -1 : 1) * (hh * 60 + mm) * kMsPerMinute;
  return true;
}

// Checks the fields and converts them: false (with *why) when out of range.
bool Assemble(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec, int64_t ms, int64_t* local,
              std::string* why) {
  if (mo < 1 || mo > 12) {
    *why = "The parsed date was invalid";
    return false;
  }
  if (d < 1 || d > DaysInMonth(y, static_cast<int>(mo)) || h > 23 || mi > 59 || sec > 59) {
    *why = "The parsed date was invalid";
    return false;
  }
  if (!FromFields(y, mo, d, h, mi, sec, ms, local)) {
    *why = "date out of range";
    return false;
  }
  return true;
}

// Parses "YYYY-MM-DD", optionally followed by "T" or " " and
// "HH:MM[:SS[.fff]]", optionally followed by a zone.  *has_zone tells whether
// the string named its own offset.
bool ParseIso(std::string_view s, int64_t* utc_ms, bool* has_zone, std::string* why) {
  size_t i = 0;
  int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  *has_zone = false;
  *why = "an incomplete date/time string has been found, with elements missing";
  if (!Digits(s, &i, 4, &y) || i >= s.size() || s[i++] != '-' || !Digits(s, &i, 2, &mo) || i >= s.size() ||
      s[i++] != '-' || !Digits(s, &i, 2, &d)) {
    return false;
  }
  int64_t off = 0;
  if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
    ++i;
    if (!Digits(s, &i, 2, &h) || i >= s.size() || s[i++] != ':' || !Digits(s, &i, 2, &mi)) return false;
    if (i < s.size() && s[i] == ':') {
      ++i;
      if (!Digits(s, &i, 2, &sec)) return false;
      if (i < s.size() && s[i] == '.') {
        ++i;
        int64_t scale = 100;
        size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          ms += (s[i] - '0') * scale;
          scale /= 10;
          ++i;
        }
        if (i == start) return false;
      }
    }
  }
  if (i < s.size()) {
    // "2018-03-20 11:00:06 +0500": a zone may follow a space.
    if (s[i] == ' ' && i + 1 < s.size()) ++i;
    if (!ZoneSuffix(s, &i, &off)) {
      *why = "Trailing data";
      return false;
    }
    *has_zone = true;
  }
  if (i != s.size()) {
    *why = "Trailing data";
    return false;
  }
  int64_t local = 0;
  if (!Assemble(y, mo, d, h, mi, sec, ms, &local, why)) return false;
  *utc_ms = local - off;
  return true;
}

// Parses `s` against a $dateFromString format.
bool ParseWithFormat(std::string_view s, std::string_view f, int64_t* utc_ms, bool* has_zone, std::string* why) {
  int64_t y = 1970, mo = 1, d = 1, h = 0, mi = 0, sec = 0, ms = 0, off = 0;
  int64_t iso_year = -1, iso_week = -1, iso_dow = -1;
  *has_zone = false;
  size_t i = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    if (f[k] != '%') {
      if (i >= s.size() || s[i] != f[k]) {
        *why = "Format literal not found";
        return false;
      }
      ++i;
      continue;
    }
    const char c = f[++k];
    bool ok = true;
    switch (c) {
      case 'Y': ok = Digits(s, &i, 4, &y); break;
      case 'G': ok = Digits(s, &i, 4, &iso_year); break;
      case 'm': ok = Digits(s, &i, 2, &mo); break;
      case 'd': ok = Digits(s, &i, 2, &d); break;
      case 'H': ok = Digits(s, &i, 2, &h); break;
      case 'M': ok = Digits(s, &i, 2, &mi); break;
      case 'S': ok = Digits(s, &i, 2, &sec); break;
      case 'L': ok = Digits(s, &i, 3, &ms); break;
      case 'V': ok = Digits(s, &i, 2, &iso_week); break;
      case 'u': ok = Digits(s, &i, 1, &iso_dow); break;
      case 'z':
      case 'Z':
        ok = ZoneSuffix(s, &i, &off);
        *has_zone = true;
        break;
      case '%':
        ok = i < s.size() && s[i++] == '%';
        break;
      default:
        *why = std::string("format specifier %") + c + " is not supported by $dateFromString";
        return false;
    }
    if (!ok) {
      *why = std::string("Error parsing the date string at format specifier %") + c;
      return false;
    }
  }
  if (i != s.size()) {
    *why = "Trailing data";
    return false;
  }
  int64_t local = 0;
  if (iso_year >= 0) {
    // ISO week date: Monday of week 1 is the Monday on or before January 4.
    int64_t jan4 = 0;
    if (!FromFields(iso_year, 1, 4, 0, 0, 0, 0, &jan4)) {
      *why = "date out of range";
      return false;
    }
    Parts p;
    BreakDown(jan4, &p);
    const int64_t iso_dow_jan4 = p.wday == 0 ? 7 : p.wday;
    const int64_t days = (iso_week < 0 ? 0 : iso_week - 1) * 7 + (iso_dow < 0 ? 0 : iso_dow - 1) - (iso_dow_jan4 - 1);
    local = jan4 + days * kMsPerDay + h * kMsPerHour + mi * kMsPerMinute + sec * kMsPerSecond + ms;
  } else if (!Assemble(y, mo, d, h, mi, sec, ms, &local, why)) {
    return false;
  }
  *utc_ms = local - off;
  return true;
}

}  // namespace

std::string FormatIsoDate(int64_t unix_ms) {
  Parts p;
  if (!BreakDown(unix_ms, &p)) return "invalid date";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", static_cast<long long>(p.year), p.month,
                p.day, p.hour, p.minute, p.second, p.millisecond);
  return buf;
}

bool ParseIsoDate(std::string_view s, int64_t* unix_ms, std::string* why) {
  bool has_zone = false;
  return ParseIso(s, unix_ms, &has_zone, why);
}

StatusOr<int64_t> CoerceToDate(const Value& v) {
  switch (v.type()) {
    case BSON_TYPE_DATE_TIME: return v.date();
    case BSON_TYPE_TIMESTAMP: return int64_t{v.bson().value.v_timestamp.timestamp} * kMsPerSecond;
    case BSON_TYPE_OID: return int64_t{bson_oid_get_time_t(&v.bson().value.v_oid)} * kMsPerSecond;
    default: return Err(16006, "can't convert from BSON type " + T(v) + " to Date");
  }
}

namespace {

// ---------------------------------------------------------------------------
// $year ... $isoDayOfWeek: {$op: <date>}, {$op: [<date>]} or
// {$op: {date: <date>, timezone: <tz>}}.

enum class Field {
  kYear, kMonth, kDayOfMonth, kDayOfWeek, kDayOfYear, kHour, kMinute, kSecond, kMillisecond,
  kWeek, kIsoWeek, kIsoWeekYear, kIsoDayOfWeek,
};

class DateFieldExpression final : public Expression {
 public:
  DateFieldExpression(const char* name, Field field, ExprPtr date, ExprPtr tz)
      : name_(name), field_(field), date_(std::move(date)), tz_(std::move(tz)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value d, date_->Evaluate(ctx));
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (d.nullish() || null_tz) return Value::Null();
    ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(d));
    Parts p;
    if (!BreakDown(ms + off, &p)) return Status(ErrorCode::kOverflow, "date out of range");
    switch (field_) {
      case Field::kYear: return IntegerValue(p.year);
      case Field::kMonth: return Value::Int32(p.month);
      case Field::kDayOfMonth: return Value::Int32(p.day);
      case Field::kDayOfWeek: return Value::Int32(p.wday + 1);
      case Field::kDayOfYear: return Value::Int32(p.yday + 1);
      case Field::kHour: return Value::Int32(p.hour);
      case Field::kMinute: return Value::Int32(p.minute);
      case Field::kSecond: return Value::Int32(p.second);
      case Field::kMillisecond: return Value::Int32(p.millisecond);
      case Field::kWeek: return IntegerValue(TmField(p.tm, "%U"));
      case Field::kIsoWeek: return IntegerValue(TmField(p.tm, "%V"));
      case Field::kIsoWeekYear: return IntegerValue(TmField(p.tm, "%G"));
      case Field::kIsoDayOfWeek: return IntegerValue(TmField(p.tm, "%u"));
    }
    return Value::Null();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("date", date_.get());
    s.Add("timezone", tz_.get());
  }

 private:
  const char* name_;
  Field field_;
  ExprPtr date_, tz_;
};

Field FieldOf(std::string_view op) {
  static const std::pair<const char*, Field> kFields[] = {
      {"$year", Field::kYear},         {"$month", Field::kMonth},           {"$dayOfMonth", Field::kDayOfMonth},
      {"$dayOfWeek", Field::kDayOfWeek}, {"$dayOfYear", Field::kDayOfYear}, {"$hour", Field::kHour},
      {"$minute", Field::kMinute},     {"$second", Field::kSecond},         {"$millisecond", Field::kMillisecond},
      {"$week", Field::kWeek},         {"$isoWeek", Field::kIsoWeek},       {"$isoWeekYear", Field::kIsoWeekYear},
      {"$isoDayOfWeek", Field::kIsoDayOfWeek},
  };
  for (const auto& [n, f] : kFields) {
    if (op == n) return f;
  }
  return Field::kYear;
}

StatusOr<ExprPtr> ParseDateField(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  ExprPtr date, tz;
  if (spec.value_type == BSON_TYPE_DOCUMENT) {
    bson_iter_t it;
    bson_iter_init_from_data(&it, spec.value.v_doc.data, spec.value.v_doc.data_len);
    bson_iter_t first = it;
    if (bson_iter_next(&first) && bson_iter_key(&first)[0] == '$') {
      // An expression that computes the date: {$year: {$add: [...]}}.
      ASSIGN_OR_RETURN(date, ParseSub(spec, pc));
    } else {
      while (bson_iter_next(&it)) {
        std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
        if (key == "date") {
          ASSIGN_OR_RETURN(date, ParseSub(*bson_iter_value(&it), pc));
        } else if (key == "timezone") {
          ASSIGN_OR_RETURN(tz, ParseSub(*bson_iter_value(&it), pc));
        } else {
          return Err(40535, "unrecognized option to " + op + ": \"" + std::string(key) + "\"");
        }
      }
      if (date == nullptr) {
        return Err(40539, "missing 'date' argument to " + op + ", provided: " + Value::Borrow(spec).ToString());
      }
    }
  } else if (spec.value_type == BSON_TYPE_ARRAY) {
    ASSIGN_OR_RETURN(std::vector<ExprPtr> args, ParseArgs(spec, pc));
    if (args.size() != 1) {
      return Err(40536, op + " accepts exactly one argument if given an array, but was given " +
                            std::to_string(args.size()));
    }
    date = std::move(args[0]);
  } else {
    ASSIGN_OR_RETURN(date, ParseSub(spec, pc));
  }
  return ExprPtr(new DateFieldExpression(name, FieldOf(op), std::move(date), std::move(tz)));
}

// ---------------------------------------------------------------------------
// $dateToString

class DateToStringExpression final : public Expression {
 public:
  DateToStringExpression(ExprPtr date, ExprPtr format, ExprPtr tz, ExprPtr on_null)
      : date_(std::move(date)), format_(std::move(format)), tz_(std::move(tz)), on_null_(std::move(on_null)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value d, date_->Evaluate(ctx));
    std::string format = "%Y-%m-%dT%H:%M:%S.%LZ";
    if (format_ != nullptr) {
      ASSIGN_OR_RETURN(Value f, format_->Evaluate(ctx));
      if (f.nullish()) return Value::Null();
      if (!f.is_string()) {
        return Err(18533, "$dateToString requires that 'format' be a string, found: " + T(f) + " with value " +
                              f.ToString());
      }
      RETURN_IF_ERROR(ValidateFormat(f.str()));
      format = std::string(f.str());
    }
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (null_tz) return Value::Null();
    if (d.nullish()) {
      if (on_null_ != nullptr) return on_null_->Evaluate(ctx);
      return Value::Null();
    }
    ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(d));
    // Without a format, a non-UTC zone drops the trailing "Z".
    if (format_ == nullptr && off != 0) format = "%Y-%m-%dT%H:%M:%S.%L";
    ASSIGN_OR_RETURN(std::string s, FormatDate(format, ms, off));
    return Value::String(std::move(s));
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$dateToString");
    s.Add("date", date_.get());
    s.Add("format", format_.get());
    s.Add("timezone", tz_.get());
    s.Add("onNull", on_null_.get());
  }

 private:
  ExprPtr date_, format_, tz_, on_null_;
};

StatusOr<ExprPtr> ParseDateToString(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(18629, "$dateToString only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"date", "format", "timezone", "onNull"}, 18534,
                                                   "Unrecognized argument to $dateToString: "));
  if (!args.Has("date")) return Err(18628, "Missing 'date' parameter to $dateToString");
  if (const bson_value_t* f = args.Get("format")) {
    // A literal format is checked now.
    if (f->value_type == BSON_TYPE_UTF8 && (f->value.v_utf8.len == 0 || f->value.v_utf8.str[0] != '$')) {
      RETURN_IF_ERROR(ValidateFormat(std::string_view(f->value.v_utf8.str, f->value.v_utf8.len)));
    }
  }
  ASSIGN_OR_RETURN(ExprPtr date, args.Parse("date", pc));
  ASSIGN_OR_RETURN(ExprPtr format, args.Parse("format", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  ASSIGN_OR_RETURN(ExprPtr on_null, args.Parse("onNull", pc));
  return ExprPtr(new DateToStringExpression(std::move(date), std::move(format), std::move(tz), std::move(on_null)));
}

// ---------------------------------------------------------------------------
// $dateFromString

class DateFromStringExpression final : public Expression {
 public:
  DateFromStringExpression(ExprPtr str, ExprPtr format, ExprPtr tz, ExprPtr on_error, ExprPtr on_null)
      : str_(std::move(str)), format_(std::move(format)), tz_(std::move(tz)), on_error_(std::move(on_error)),
        on_null_(std::move(on_null)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value s, str_->Evaluate(ctx));
    std::string format;
    bool has_format = false;
    if (format_ != nullptr) {
      ASSIGN_OR_RETURN(Value f, format_->Evaluate(ctx));
      if (f.nullish()) return Value::Null();
      if (!f.is_string()) {
        return Err(40684, "$dateFromString requires that 'format' be a string, found: " + T(f) + " with value " +
                              f.ToString());
      }
      RETURN_IF_ERROR(ValidateFormat(f.str()));
      format = std::string(f.str());
      has_format = true;
    }
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (null_tz) return Value::Null();
    if (s.nullish()) {
      if (on_null_ != nullptr) return on_null_->Evaluate(ctx);
      return Value::Null();
    }
    StatusOr<Value> parsed = Parse(s, has_format, format, off);
    if (!parsed.ok() && parsed.status().code_number() == kConversionFailure && on_error_ != nullptr) {
      return on_error_->Evaluate(ctx);
    }
    return parsed;
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$dateFromString");
    s.Add("dateString", str_.get());
    s.Add("format", format_.get());
    s.Add("timezone", tz_.get());
    s.Add("onError", on_error_.get());
    s.Add("onNull", on_null_.get());
  }

 private:
  StatusOr<Value> Parse(const Value& s, bool has_format, const std::string& format, int64_t off) const {
    if (!s.is_string()) {
      return Err(kConversionFailure, "$dateFromString requires that 'dateString' be a string, found: " + T(s) +
                                         " with value " + s.ToString());
    }
    int64_t ms = 0;
    bool has_zone = false;
    std::string why;
    const bool ok = has_format ? ParseWithFormat(s.str(), format, &ms, &has_zone, &why)
                               : ParseIso(s.str(), &ms, &has_zone, &why);
    if (!ok) {
      return Err(kConversionFailure, "Error parsing date string '" + std::string(s.str()) + "'; " + why);
    }
    if (has_zone && tz_ != nullptr) {
      return Err(kConversionFailure, "you cannot pass in a date/time string with GMT offset together with a "
                                     "timezone argument");
    }
    return Value::Date(has_zone ? ms : ms - off);
  }

  ExprPtr str_, format_, tz_, on_error_, on_null_;
};

StatusOr<ExprPtr> ParseDateFromString(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40540, "$dateFromString only supports an object as an argument, found: " +
                          std::string(BsonTypeNameOf(spec)));
  }
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"dateString", "format", "timezone", "onError", "onNull"},
                                                   40541, "Unrecognized argument to $dateFromString: "));
  if (!args.Has("dateString")) return Err(40542, "Missing 'dateString' parameter to $dateFromString");
  if (const bson_value_t* f = args.Get("format")) {
    if (f->value_type == BSON_TYPE_UTF8 && (f->value.v_utf8.len == 0 || f->value.v_utf8.str[0] != '$')) {
      RETURN_IF_ERROR(ValidateFormat(std::string_view(f->value.v_utf8.str, f->value.v_utf8.len)));
    }
  }
  ASSIGN_OR_RETURN(ExprPtr str, args.Parse("dateString", pc));
  ASSIGN_OR_RETURN(ExprPtr format, args.Parse("format", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  ASSIGN_OR_RETURN(ExprPtr on_error, args.Parse("onError", pc));
  ASSIGN_OR_RETURN(ExprPtr on_null, args.Parse("onNull", pc));
  return ExprPtr(new DateFromStringExpression(std::move(str), std::move(format), std::move(tz), std::move(on_error),
                                              std::move(on_null)));
}

// ---------------------------------------------------------------------------
// $dateToParts

class DateToPartsExpression final : public Expression {
 public:
  DateToPartsExpression(ExprPtr date, ExprPtr tz, ExprPtr iso)
      : date_(std::move(date)), tz_(std::move(tz)), iso_(std::move(iso)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value d, date_->Evaluate(ctx));
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    bool iso = false;
    if (iso_ != nullptr) {
      ASSIGN_OR_RETURN(Value i, iso_->Evaluate(ctx));
      if (i.nullish()) return Value::Null();
      if (i.type() != BSON_TYPE_BOOL) return Err(40521, "iso8601 must evaluate to a bool, found " + T(i));
      iso = i.boolean();
    }
    if (d.nullish() || null_tz) return Value::Null();
    ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(d));
    Parts p;
    if (!BreakDown(ms + off, &p)) return Status(ErrorCode::kOverflow, "date out of range");
    ValueBuilder b(ValueBuilder::kDocument);
    if (iso) {
      b.Append("isoWeekYear", IntegerValue(TmField(p.tm, "%G")));
      b.Append("isoWeek", IntegerValue(TmField(p.tm, "%V")));
      b.Append("isoDayOfWeek", IntegerValue(TmField(p.tm, "%u")));
    } else {
      b.Append("year", IntegerValue(p.year));
      b.Append("month", Value::Int32(p.month));
      b.Append("day", Value::Int32(p.day));
    }
    b.Append("hour", Value::Int32(p.hour));
    b.Append("minute", Value::Int32(p.minute));
    b.Append("second", Value::Int32(p.second));
    b.Append("millisecond", Value::Int32(p.millisecond));
    return b.Finish();
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$dateToParts");
    s.Add("date", date_.get());
    s.Add("timezone", tz_.get());
    s.Add("iso8601", iso_.get());
  }

 private:
  ExprPtr date_, tz_, iso_;
};

StatusOr<ExprPtr> ParseDateToParts(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(40524, "$dateToParts only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"date", "timezone", "iso8601"}, 40520,
                                                   "Unrecognized argument to $dateToParts: "));
  if (!args.Has("date")) return Err(40522, "Missing 'date' parameter to $dateToParts");
  ASSIGN_OR_RETURN(ExprPtr date, args.Parse("date", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  ASSIGN_OR_RETURN(ExprPtr iso, args.Parse("iso8601", pc));
  return ExprPtr(new DateToPartsExpression(std::move(date), std::move(tz), std::move(iso)));
}

// ---------------------------------------------------------------------------
// $dateFromParts

class DateFromPartsExpression final : public Expression {
 public:
  // parts: year|isoWeekYear, month|isoWeek, day|isoDayOfWeek, hour, minute,
  // second, millisecond (null when absent).
  DateFromPartsExpression(bool iso, std::vector<ExprPtr> parts, ExprPtr tz)
      : iso_(iso), parts_(std::move(parts)), tz_(std::move(tz)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    static const char* const kNatural[] = {"year", "month", "day", "hour", "minute", "second", "millisecond"};
    static const char* const kIso[] = {"isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second",
                                       "millisecond"};
    int64_t v[7] = {0, 1, 1, 0, 0, 0, 0};
    for (size_t i = 0; i < 7; ++i) {
      if (parts_[i] == nullptr) continue;
      ASSIGN_OR_RETURN(Value x, parts_[i]->Evaluate(ctx));
      if (x.nullish()) return Value::Null();
      const std::string name = iso_ ? kIso[i] : kNatural[i];
      if (!ToInt64Exact(x, &v[i])) {
        return Err(40515, "'" + name + "' must evaluate to an integer, found " + T(x) + " with value " + x.ToString());
      }
      if (i == 0) {
        if (v[i] < 1 || v[i] > 9999) {
          return Err(40523, "'" + name + "' must evaluate to an integer in the range 1 to 9999, found " +
                                std::to_string(v[i]));
        }
      } else if (v[i] < -32768 || v[i] > 32767) {
        return Err(31034, "'" + name + "' must evaluate to a value in the range [-32768, 32767]; value " +
                              std::to_string(v[i]) + " is not in range");
      }
    }
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (null_tz) return Value::Null();
    int64_t local = 0;
    if (!iso_) {
      if (!FromFields(v[0], v[1], v[2], v[3], v[4], v[5], v[6], &local)) {
        return Status(ErrorCode::kOverflow, "$dateFromParts: date out of range");
      }
    } else {
      int64_t jan4 = 0;
      if (!FromFields(v[0], 1, 4, 0, 0, 0, 0, &jan4)) return Status(ErrorCode::kOverflow, "date out of range");
      Parts p;
      BreakDown(jan4, &p);
      const int64_t iso_dow_jan4 = p.wday == 0 ? 7 : p.wday;
      const int64_t days = (v[1] - 1) * 7 + (v[2] - 1) - (iso_dow_jan4 - 1);
      local = jan4 + days * kMsPerDay + v[3] * kMsPerHour + v[4] * kMsPerMinute + v[5] * kMsPerSecond + v[6];
    }
    return Value::Date(local - off);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    static const char* const kNatural[] = {"year", "month", "day", "hour", "minute", "second", "millisecond"};
    static const char* const kIso[] = {"isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second",
                                       "millisecond"};
    NamedSerializer s(out, key, "$dateFromParts");
    for (size_t i = 0; i < 7; ++i) s.Add(iso_ ? kIso[i] : kNatural[i], parts_[i].get());
    s.Add("timezone", tz_.get());
  }

 private:
  bool iso_;
  std::vector<ExprPtr> parts_;
  ExprPtr tz_;
};

StatusOr<ExprPtr> ParseDateFromParts(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) {
    return Err(40519, "$dateFromParts only supports an object as its argument");
  }
  ASSIGN_OR_RETURN(NamedArgs args,
                   NamedArgs::Read(spec, {"year", "month", "day", "hour", "minute", "second", "millisecond",
                                          "isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"},
                                   40518, "Unrecognized argument to $dateFromParts: "));
  const bool natural = args.Has("year") || args.Has("month") || args.Has("day");
  const bool iso = args.Has("isoWeekYear") || args.Has("isoWeek") || args.Has("isoDayOfWeek");
  if (natural && iso) return Err(40489, "$dateFromParts does not allow mixing natural dates with ISO dates");
  if (!args.Has("year") && !args.Has("isoWeekYear")) {
    return Err(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present");
  }
  const char* const names[7] = {iso ? "isoWeekYear" : "year", iso ? "isoWeek" : "month",
                                iso ? "isoDayOfWeek" : "day", "hour", "minute", "second", "millisecond"};
  std::vector<ExprPtr> parts;
  for (const char* n : names) {
    ASSIGN_OR_RETURN(ExprPtr e, args.Parse(n, pc));
    parts.push_back(std::move(e));
  }
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  return ExprPtr(new DateFromPartsExpression(iso, std::move(parts), std::move(tz)));
}

// ---------------------------------------------------------------------------
// Time units: $dateAdd $dateSubtract $dateDiff $dateTrunc

enum class Unit { kYear, kQuarter, kMonth, kWeek, kDay, kHour, kMinute, kSecond, kMillisecond };

bool ParseUnit(std::string_view s, Unit* u) {
  static const std::pair<const char*, Unit> kUnits[] = {
      {"year", Unit::kYear}, {"quarter", Unit::kQuarter}, {"month", Unit::kMonth},   {"week", Unit::kWeek},
      {"day", Unit::kDay},   {"hour", Unit::kHour},       {"minute", Unit::kMinute}, {"second", Unit::kSecond},
      {"millisecond", Unit::kMillisecond},
  };
  for (const auto& [n, unit] : kUnits) {
    if (s == n) {
      *u = unit;
      return true;
    }
  }
  return false;
}

int64_t FixedUnitMs(Unit u) {
  switch (u) {
    case Unit::kWeek: return 7 * kMsPerDay;
    case Unit::kDay: return kMsPerDay;
    case Unit::kHour: return kMsPerHour;
    case Unit::kMinute: return kMsPerMinute;
    case Unit::kSecond: return kMsPerSecond;
    case Unit::kMillisecond: return 1;
    default: return 0;  // calendar units
  }
}

int64_t MonthsPerUnit(Unit u) { return u == Unit::kYear ? 12 : (u == Unit::kQuarter ? 3 : 1); }

// 0 = Sunday ... 6 = Saturday; -1 when `s` names no day.
int DayOfWeek(std::string_view s) {
  static const char* const kDays[] = {"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"};
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int i = 0; i < 7; ++i) {
    if (lower == kDays[i] || lower == std::string(kDays[i]).substr(0, 3)) return i;
  }
  return -1;
}

// Adds `amount` calendar months to local time `local`, clamping the day to
// the end of the month (Jan 31 + 1 month is Feb 28 or 29).
bool AddMonths(int64_t local, int64_t amount, int64_t* out) {
  Parts p;
  if (!BreakDown(local, &p)) return false;
  int64_t m = 0;
  if (__builtin_add_overflow(p.year * 12 + (p.month - 1), amount, &m)) return false;
  const int64_t year = FloorDiv(m, 12);
  const int month = static_cast<int>(m - year * 12) + 1;
  const int day = std::min(p.day, DaysInMonth(year, month));
  return FromFields(year, month, day, p.hour, p.minute, p.second, p.millisecond, out);
}

// The index of the week (starting on `start_dow`) that local day `days`
// (since 1970-01-01, a Thursday) falls in.
int64_t WeekIndex(int64_t days, int start_dow) { return FloorDiv(days + 4 - start_dow, 7); }

class DateArithExpression final : public Expression {
 public:
  DateArithExpression(const char* name, bool subtract, ExprPtr start, ExprPtr unit, ExprPtr amount, ExprPtr tz)
      : name_(name), subtract_(subtract), start_(std::move(start)), unit_(std::move(unit)), amount_(std::move(amount)),
        tz_(std::move(tz)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    const std::string op = name_;
    ASSIGN_OR_RETURN(Value start, start_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value unit, unit_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value amount, amount_->Evaluate(ctx));
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (start.nullish() || unit.nullish() || amount.nullish() || null_tz) return Value::Null();
    if (!start.is_date() && start.type() != BSON_TYPE_TIMESTAMP && start.type() != BSON_TYPE_OID) {
      return Err(5166403, op + " requires startDate to be convertible to a date");
    }
    ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(start));
    if (!unit.is_string()) return Err(5166404, op + " expects string defining the time unit");
    Unit u;
    if (!ParseUnit(unit.str(), &u)) {
      return Status(ErrorCode::kFailedToParse, "unknown time unit value: " + std::string(unit.str()));
    }
    int64_t n = 0;
    if (!ToInt64Exact(amount, &n)) return Err(5166405, op + " expects integer amount of time units");
    if (subtract_) {
      if (n == INT64_MIN) return Err(6045000, "invalid " + op + " 'amount' parameter value: " + amount.ToString());
      n = -n;
    }
    int64_t out = 0;
    const int64_t fixed = FixedUnitMs(u);
    if (fixed != 0) {
      int64_t delta = 0;
      if (__builtin_mul_overflow(n, fixed, &delta) || __builtin_add_overflow(ms, delta, &out)) {
        return Err(5166406, op + " overflowed");
      }
    } else {
      int64_t months = 0;
      if (__builtin_mul_overflow(n, MonthsPerUnit(u), &months) || !AddMonths(ms + off, months, &out)) {
        return Err(5166406, op + " overflowed");
      }
      out -= off;
    }
    return Value::Date(out);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, name_);
    s.Add("startDate", start_.get());
    s.Add("unit", unit_.get());
    s.Add("amount", amount_.get());
    s.Add("timezone", tz_.get());
  }

 private:
  const char* name_;
  bool subtract_;
  ExprPtr start_, unit_, amount_, tz_;
};

StatusOr<ExprPtr> ParseDateArith(const char* name, const bson_value_t& spec, ParseContext* pc) {
  const std::string op = name;
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(5166400, op + " only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"startDate", "unit", "amount", "timezone"}, 5166401,
                                                   "Unrecognized argument to " + op + ": "));
  if (!args.Has("startDate") || !args.Has("unit") || !args.Has("amount")) {
    return Err(5166402, op + " requires startDate, unit, and amount to be present");
  }
  ASSIGN_OR_RETURN(ExprPtr start, args.Parse("startDate", pc));
  ASSIGN_OR_RETURN(ExprPtr unit, args.Parse("unit", pc));
  ASSIGN_OR_RETURN(ExprPtr amount, args.Parse("amount", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  return ExprPtr(new DateArithExpression(name, op == "$dateSubtract", std::move(start), std::move(unit),
                                         std::move(amount), std::move(tz)));
}

// Evaluates startOfWeek: the day (0 = Sunday), Sunday when absent;
// *null_result when it is null.
StatusOr<int> EvalStartOfWeek(const Expression* e, const EvalContext& ctx, const std::string& op, bool* null_result) {
  if (e == nullptr) return 0;
  ASSIGN_OR_RETURN(Value v, e->Evaluate(ctx));
  if (v.nullish()) {
    *null_result = true;
    return 0;
  }
  if (!v.is_string()) {
    return Err(5439015, op + " requires 'startOfWeek' to be a string, but got " + T(v));
  }
  const int d = DayOfWeek(v.str());
  if (d < 0) {
    return Err(5439016, op + " parameter 'startOfWeek' value cannot be recognized as a day of a week: " +
                            std::string(v.str()));
  }
  return d;
}

class DateDiffExpression final : public Expression {
 public:
  DateDiffExpression(ExprPtr start, ExprPtr end, ExprPtr unit, ExprPtr tz, ExprPtr start_of_week)
      : start_(std::move(start)), end_(std::move(end)), unit_(std::move(unit)), tz_(std::move(tz)),
        start_of_week_(std::move(start_of_week)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value start, start_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value end, end_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value unit, unit_->Evaluate(ctx));
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    if (start.nullish() || end.nullish() || unit.nullish() || null_tz) return Value::Null();
    auto as_date = [](const Value& v, const char* which, int64_t* ms) -> Status {
      if (!v.is_date() && v.type() != BSON_TYPE_TIMESTAMP && v.type() != BSON_TYPE_OID) {
        return Err(5166307, std::string("$dateDiff requires '") + which + "' to be a date, but got " + T(v));
      }
      ASSIGN_OR_RETURN(*ms, CoerceToDate(v));
      return Status::OK();
    };
    int64_t a = 0, b = 0;
    RETURN_IF_ERROR(as_date(start, "startDate", &a));
    RETURN_IF_ERROR(as_date(end, "endDate", &b));
    if (!unit.is_string()) return Err(5439013, "$dateDiff requires 'unit' to be a string, but got " + T(unit));
    Unit u;
    if (!ParseUnit(unit.str(), &u)) {
      return Err(5439014, "$dateDiff parameter 'unit' value cannot be recognized as a time unit: " +
                              std::string(unit.str()));
    }
    int start_dow = 0;
    if (u == Unit::kWeek) {
      bool null_sow = false;
      ASSIGN_OR_RETURN(start_dow, EvalStartOfWeek(start_of_week_.get(), ctx, "$dateDiff", &null_sow));
      if (null_sow) return Value::Null();
    }
    // Boundaries of `unit` crossed between the two local times.
    const int64_t la = a + off, lb = b + off;
    switch (u) {
      case Unit::kMillisecond: {
        int64_t d = 0;
        if (__builtin_sub_overflow(lb, la, &d)) return Status(ErrorCode::kOverflow, "$dateDiff overflowed");
        return Value::Int64(d);
      }
      case Unit::kSecond: return Value::Int64(FloorDiv(lb, kMsPerSecond) - FloorDiv(la, kMsPerSecond));
      case Unit::kMinute: return Value::Int64(FloorDiv(lb, kMsPerMinute) - FloorDiv(la, kMsPerMinute));
      case Unit::kHour: return Value::Int64(FloorDiv(lb, kMsPerHour) - FloorDiv(la, kMsPerHour));
      case Unit::kDay: return Value::Int64(FloorDiv(lb, kMsPerDay) - FloorDiv(la, kMsPerDay));
      case Unit::kWeek:
        return Value::Int64(WeekIndex(FloorDiv(lb, kMsPerDay), start_dow) -
                            WeekIndex(FloorDiv(la, kMsPerDay), start_dow));
      default: break;
    }
    Parts pa, pb;
    if (!BreakDown(la, &pa) || !BreakDown(lb, &pb)) return Status(ErrorCode::kOverflow, "date out of range");
    if (u == Unit::kYear) return Value::Int64(pb.year - pa.year);
    if (u == Unit::kQuarter) {
      return Value::Int64((pb.year * 4 + (pb.month - 1) / 3) - (pa.year * 4 + (pa.month - 1) / 3));
    }
    return Value::Int64((pb.year * 12 + pb.month) - (pa.year * 12 + pa.month));
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$dateDiff");
    s.Add("startDate", start_.get());
    s.Add("endDate", end_.get());
    s.Add("unit", unit_.get());
    s.Add("timezone", tz_.get());
    s.Add("startOfWeek", start_of_week_.get());
  }

 private:
  ExprPtr start_, end_, unit_, tz_, start_of_week_;
};

StatusOr<ExprPtr> ParseDateDiff(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(5166301, "$dateDiff only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"startDate", "endDate", "unit", "timezone", "startOfWeek"},
                                                   5166302, "Unrecognized argument to $dateDiff: "));
  if (!args.Has("startDate")) return Err(5166303, "Missing 'startDate' parameter to $dateDiff");
  if (!args.Has("endDate")) return Err(5166304, "Missing 'endDate' parameter to $dateDiff");
  if (!args.Has("unit")) return Err(5166305, "Missing 'unit' parameter to $dateDiff");
  ASSIGN_OR_RETURN(ExprPtr start, args.Parse("startDate", pc));
  ASSIGN_OR_RETURN(ExprPtr end, args.Parse("endDate", pc));
  ASSIGN_OR_RETURN(ExprPtr unit, args.Parse("unit", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  ASSIGN_OR_RETURN(ExprPtr sow, args.Parse("startOfWeek", pc));
  return ExprPtr(new DateDiffExpression(std::move(start), std::move(end), std::move(unit), std::move(tz), std::move(sow)));
}

class DateTruncExpression final : public Expression {
 public:
  DateTruncExpression(ExprPtr date, ExprPtr unit, ExprPtr bin, ExprPtr tz, ExprPtr start_of_week)
      : date_(std::move(date)), unit_(std::move(unit)), bin_(std::move(bin)), tz_(std::move(tz)),
        start_of_week_(std::move(start_of_week)) {}

  StatusOr<Value> Evaluate(const EvalContext& ctx) const override {
    ASSIGN_OR_RETURN(Value date, date_->Evaluate(ctx));
    ASSIGN_OR_RETURN(Value unit, unit_->Evaluate(ctx));
    bool null_tz = false;
    ASSIGN_OR_RETURN(int64_t off, EvalTimezone(tz_.get(), ctx, &null_tz));
    int64_t bin = 1;
    if (bin_ != nullptr) {
      ASSIGN_OR_RETURN(Value b, bin_->Evaluate(ctx));
      if (b.nullish()) return Value::Null();
      if (!ToInt64Exact(b, &bin)) {
        return Err(5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '" + b.ToString() +
                                "' of type " + T(b));
      }
      if (bin <= 0) {
        return Err(5439018, "$dateTrunc requires 'binSize' to be greater than 0, but got value " +
                                std::to_string(bin));
      }
    }
    if (date.nullish() || unit.nullish() || null_tz) return Value::Null();
    if (!date.is_date() && date.type() != BSON_TYPE_TIMESTAMP && date.type() != BSON_TYPE_OID) {
      return Err(5439012, "$dateTrunc requires 'date' to be a date, but got " + T(date));
    }
    ASSIGN_OR_RETURN(int64_t ms, CoerceToDate(date));
    if (!unit.is_string()) return Err(5439013, "$dateTrunc requires 'unit' to be a string, but got " + T(unit));
    Unit u;
    if (!ParseUnit(unit.str(), &u)) {
      return Err(5439014, "$dateTrunc parameter 'unit' value cannot be recognized as a time unit: " +
                              std::string(unit.str()));
    }
    int start_dow = 0;
    if (u == Unit::kWeek) {
      bool null_sow = false;
      ASSIGN_OR_RETURN(start_dow, EvalStartOfWeek(start_of_week_.get(), ctx, "$dateTrunc", &null_sow));
      if (null_sow) return Value::Null();
    }
    const int64_t local = ms + off;
    // The bins count from 2000-01-01T00:00 local (for weeks: the first
    // startOfWeek day on or after it).
    int64_t ref = 0;
    FromFields(2000, 1, 1, 0, 0, 0, 0, &ref);
    int64_t out = 0;
    const int64_t fixed = FixedUnitMs(u);
    if (fixed != 0) {
      if (u == Unit::kWeek) {
        // 2000-01-01 was a Saturday (6).
        ref += int64_t{(start_dow - 6 + 7) % 7} * kMsPerDay;
      }
      int64_t width = 0;
      if (__builtin_mul_overflow(fixed, bin, &width)) {
        return Err(5439002, "$dateTrunc binSize is too large for unit " + std::string(unit.str()));
      }
      const int64_t n = FloorDiv(local - ref, width);
      if (__builtin_mul_overflow(n, width, &out) || __builtin_add_overflow(out, ref, &out)) {
        return Status(ErrorCode::kOverflow, "$dateTrunc overflowed");
      }
    } else {
      Parts p;
      if (!BreakDown(local, &p)) return Status(ErrorCode::kOverflow, "date out of range");
      int64_t width = 0;
      if (__builtin_mul_overflow(MonthsPerUnit(u), bin, &width)) {
        return Err(5439006, "$dateTrunc binSize is too large for unit " + std::string(unit.str()));
      }
      const int64_t months = (p.year - 2000) * 12 + (p.month - 1);
      const int64_t start = FloorDiv(months, width) * width;
      const int64_t year = 2000 + FloorDiv(start, 12);
      const int64_t month = start - FloorDiv(start, 12) * 12 + 1;
      if (!FromFields(year, month, 1, 0, 0, 0, 0, &out)) return Status(ErrorCode::kOverflow, "$dateTrunc overflowed");
    }
    return Value::Date(out - off);
  }

  void Serialize(bson_t* out, std::string_view key) const override {
    NamedSerializer s(out, key, "$dateTrunc");
    s.Add("date", date_.get());
    s.Add("unit", unit_.get());
    s.Add("binSize", bin_.get());
    s.Add("timezone", tz_.get());
    s.Add("startOfWeek", start_of_week_.get());
  }

 private:
  ExprPtr date_, unit_, bin_, tz_, start_of_week_;
};

StatusOr<ExprPtr> ParseDateTrunc(const char*, const bson_value_t& spec, ParseContext* pc) {
  if (spec.value_type != BSON_TYPE_DOCUMENT) return Err(5439007, "$dateTrunc only supports an object as its argument");
  ASSIGN_OR_RETURN(NamedArgs args, NamedArgs::Read(spec, {"date", "unit", "binSize", "timezone", "startOfWeek"},
                                                   5439008, "Unrecognized argument to $dateTrunc: "));
  if (!args.Has("date")) return Err(5439009, "Missing 'date' parameter to $dateTrunc");
  if (!args.Has("unit")) return Err(5439010, "Missing 'unit' parameter to $dateTrunc");
  ASSIGN_OR_RETURN(ExprPtr date, args.Parse("date", pc));
  ASSIGN_OR_RETURN(ExprPtr unit, args.Parse("unit", pc));
  ASSIGN_OR_RETURN(ExprPtr bin, args.Parse("binSize", pc));
  ASSIGN_OR_RETURN(ExprPtr tz, args.Parse("timezone", pc));
  ASSIGN_OR_RETURN(ExprPtr sow, args.Parse("startOfWeek", pc));
  return ExprPtr(new DateTruncExpression(std::move(date), std::move(unit), std::move(bin), std::move(tz), std::move(sow)));
}

}  // namespace

void AddDateOperators(std::vector<OperatorDef>* ops) {
  for (const char* n : {"$year", "$month", "$dayOfMonth", "$dayOfWeek", "$dayOfYear", "$hour", "$minute", "$second",
                        "$millisecond", "$week", "$isoWeek", "$isoWeekYear", "$isoDayOfWeek"}) {
    ops->push_back(OperatorDef{n, nullptr, 0, 0, ParseDateField});
  }
  ops->push_back(OperatorDef{"$dateToString", nullptr, 0, 0, ParseDateToString});
  ops->push_back(OperatorDef{"$dateFromString", nullptr, 0, 0, ParseDateFromString});
  ops->push_back(OperatorDef{"$dateToParts", nullptr, 0, 0, ParseDateToParts});
  ops->push_back(OperatorDef{"$dateFromParts", nullptr, 0, 0, ParseDateFromParts});
  ops->push_back(OperatorDef{"$dateAdd", nullptr, 0, 0, ParseDateArith});
  ops->push_back(OperatorDef{"$dateSubtract", nullptr, 0, 0, ParseDateArith});
  ops->push_back(OperatorDef{"$dateDiff", nullptr, 0, 0, ParseDateDiff});
  ops->push_back(OperatorDef{"$dateTrunc", nullptr, 0, 0, ParseDateTrunc});
}

}  // namespace internal
}  // namespace expression
}  // namespace gatedb
