#pragma once
// Numbers written as text, parsed one way everywhere: a table's fields (io/table_reader) and
// every number a flag, a domain or a config gives as a string. The whole string is the number:
// decimal or scientific notation with an optional sign ('+' too, common in libsvm labels); no
// surrounding spaces, no hexadecimal, no "inf" or "nan", no trailing characters. Header-only
// so that the table reader's per-field call stays inlined.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace privrace {

enum class NumberStatus { Ok, NotNumber, NotFinite };

// For a decimal that from_chars reported out of range: true if it overflowed (|x| huge),
// false if it underflowed (|x| tiny). Decided from the decimal exponent alone, since an
// out-of-range result is hundreds of orders of magnitude away from 1.
inline bool decimal_overflows(const char* p, const char* e) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (p != e && *p == '-') ++p;
  long int_digits = 0, frac_zeros = 0;
  bool nonzero = false;
  for (; p != e && digit(*p); ++p) {
    if (*p != '0') nonzero = true;
    if (nonzero) ++int_digits;
  }
  if (p != e && *p == '.') {
    ++p;
    for (; !nonzero && p != e && *p == '0'; ++p) ++frac_zeros;
    while (p != e && digit(*p)) ++p;
  }
  long exp = 0;
  bool neg = false;
  if (p != e && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p != e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    for (; p != e && digit(*p); ++p)
      if (exp < 1000000) exp = exp * 10 + (*p - '0');
  }
  const long order = int_digits > 0 ? int_digits - 1 : -(frac_zeros + 1);
  return order + (neg ? -exp : exp) > 0;
}

// All of `s` as one number. Overflow is NotFinite; underflow rounds to (signed) zero.
inline NumberStatus parse_number(std::string_view s, double& v) {
  const char* b = s.data();
  const char* e = b + s.size();
  if (b != e && *b == '+') {  // from_chars rejects '+', but "+1" is common (libsvm labels)
    ++b;
    if (b != e && *b == '-') return NumberStatus::NotNumber;
  }
  if (b == e) return NumberStatus::NotNumber;
  // Fast path for short integers (counts, pixel values, ids), the common case in
  // benchmark tables: below 2^53, so the double is exact and needs no rounding logic.
  {
    const char* d = b + (*b == '-');
    if (d != e && e - d <= 15) {
      std::uint64_t acc = 0;
      const char* q = d;
      for (; q != e && static_cast<unsigned char>(*q - '0') < 10; ++q) acc = acc * 10 + static_cast<unsigned>(*q - '0');
      if (q == e) {
        v = *b == '-' ? -static_cast<double>(acc) : static_cast<double>(acc);
        return NumberStatus::Ok;
      }
    }
  }
  const auto [p, ec] = std::from_chars(b, e, v);
  if (p != e) return NumberStatus::NotNumber;
  if (ec == std::errc::result_out_of_range) {
    if (decimal_overflows(b, e)) return NumberStatus::NotFinite;
    v = *b == '-' ? -0.0 : 0.0;
    return NumberStatus::Ok;
  }
  if (ec != std::errc()) return NumberStatus::NotNumber;
  return std::isfinite(v) ? NumberStatus::Ok : NumberStatus::NotFinite;
}

// The whole of `text` as one finite double, or nothing (see the top of this file).
inline std::optional<double> parse_finite_number(std::string_view text) {
  double v = 0.0;
  if (parse_number(text, v) != NumberStatus::Ok) return std::nullopt;
  return v;
}

}  // namespace privrace
