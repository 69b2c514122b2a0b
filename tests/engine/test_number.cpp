// The one parser of numbers written as text (core/number.hpp): table fields, --epsilon, box
// domains, counting-query values and config strings all go through it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "privrace/core/number.hpp"

namespace privrace {
namespace {

TEST(FiniteNumber, TheWholeStringIsOneNumber) {
  EXPECT_EQ(parse_finite_number("1"), 1.0);
  EXPECT_EQ(parse_finite_number("+1"), 1.0);
  EXPECT_EQ(parse_finite_number("-2.5e3"), -2500.0);
  EXPECT_EQ(parse_finite_number("0.1"), 0.1);  // correctly rounded, as strtod
  EXPECT_EQ(parse_finite_number(".5"), 0.5);
  EXPECT_EQ(parse_finite_number("123456789012345"), 123456789012345.0);     // the integer fast path
  EXPECT_EQ(parse_finite_number("12345678901234567890"), 12345678901234567890.0);  // past it
  EXPECT_EQ(parse_finite_number("1.7976931348623157e308"), 1.7976931348623157e308);
  // Underflow rounds to a signed zero rather than failing.
  const auto tiny = parse_finite_number("-1e-400");
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(*tiny, 0.0);
  EXPECT_TRUE(std::signbit(*tiny));
}

TEST(FiniteNumber, AnythingElseIsRefused) {
  for (const std::string text : {"", " 1", "1 ", "1abc", "0.1,", "0x10", "inf", "-inf", "nan", "1e999", "-1e400", "+-1",
                                 "--1", "+", "-", "e5", "1e", "1..2", "1,5"})
    EXPECT_FALSE(parse_finite_number(text).has_value()) << "'" << text << "'";
}

TEST(FiniteNumber, OverflowIsToldApartFromNotANumber) {
  double v = 0.0;
  EXPECT_EQ(parse_number("1e999", v), NumberStatus::NotFinite);
  EXPECT_EQ(parse_number("-123456789e400", v), NumberStatus::NotFinite);
  EXPECT_EQ(parse_number("1e-999", v), NumberStatus::Ok);
  EXPECT_EQ(parse_number("1e99x", v), NumberStatus::NotNumber);
  EXPECT_EQ(parse_number("", v), NumberStatus::NotNumber);
}

}  // namespace
}  // namespace privrace
