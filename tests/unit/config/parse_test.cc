// Every value parser: accepted spellings, canonical output, and rejection of bad input.
#include <gtest/gtest.h>

#include "config/config.h"

namespace bypass::config {
namespace {

using std::chrono::nanoseconds;

TEST(ParseBool, AcceptsCommonSpellings) {
  for (const char* yes : {"true", "TRUE", "yes", "On", "1", " true "}) EXPECT_TRUE(parse_bool(yes)) << yes;
  for (const char* no : {"false", "No", "off", "0"}) EXPECT_FALSE(parse_bool(no)) << no;
}

TEST(ParseBool, RejectsOtherWords) {
  for (const char* bad : {"", "2", "truee", "y", "nope"}) EXPECT_THROW(parse_bool(bad), ConfigError) << bad;
  try {
    parse_bool("maybe");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "'maybe' is not a boolean (use true/false, yes/no, on/off, 1/0)");
  }
}

TEST(ParseInt, DecimalHexAndSign) {
  EXPECT_EQ(parse_int("0"), 0);
  EXPECT_EQ(parse_int("42"), 42);
  EXPECT_EQ(parse_int("-17"), -17);
  EXPECT_EQ(parse_int("+5"), 5);
  EXPECT_EQ(parse_int("0x1f"), 31);
  EXPECT_EQ(parse_int("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(parse_int("-9223372036854775808"), INT64_MIN);
}

TEST(ParseInt, RejectsGarbageAndOverflow) {
  for (const char* bad : {"", "-", "1.5", "12abc", "abc", "0x", "--1", "1 2", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999999"})
    EXPECT_THROW(parse_int(bad), ConfigError) << bad;
}

TEST(ParseSize, UnitsAreBinaryAndCaseInsensitive) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("512B"), 512u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("4kb"), 4096u);
  EXPECT_EQ(parse_size("1M"), 1u << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("2gib"), 2ull << 30);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_size("1.5K"), 1536u);
  EXPECT_EQ(parse_size("0"), 0u);
}

TEST(ParseSize, RejectsBadInput) {
  for (const char* bad : {"", "K", "-1", "4X", "4KK", "1.3B", "0.1K", "1e3", "16777216T", "4 K K"})
    EXPECT_THROW(parse_size(bad), ConfigError) << bad;
}

TEST(ParseDuration, AllUnitsAndFractions) {
  EXPECT_EQ(parse_duration("0"), nanoseconds{0});
  EXPECT_EQ(parse_duration("7ns"), nanoseconds{7});
  EXPECT_EQ(parse_duration("20us"), nanoseconds{20'000});
  EXPECT_EQ(parse_duration("200ms"), nanoseconds{200'000'000});
  EXPECT_EQ(parse_duration("1.5s"), nanoseconds{1'500'000'000});
  EXPECT_EQ(parse_duration("2m"), nanoseconds{120'000'000'000});
  EXPECT_EQ(parse_duration("1h"), nanoseconds{3'600'000'000'000});
  EXPECT_EQ(parse_duration("1m30s"), nanoseconds{90'000'000'000});
  EXPECT_EQ(parse_duration("0.5ms"), nanoseconds{500'000});
}

TEST(ParseDuration, RejectsBadInput) {
  // A bare number is ambiguous (seconds? milliseconds?), so only "0" may omit the unit.
  for (const char* bad : {"", "10", "s", "-1s", "1.5ns", "10 s", "1d", "1sms", "1s1s1s1s1s1s1s1s",
                          "9999999999h"})
    EXPECT_THROW(parse_duration(bad), ConfigError) << bad;
}

TEST(FormatDuration, PicksLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_duration(nanoseconds{0}), "0s");
  EXPECT_EQ(format_duration(nanoseconds{1'500'000'000}), "1500ms");
  EXPECT_EQ(format_duration(nanoseconds{60'000'000'000}), "1m");
  EXPECT_EQ(format_duration(nanoseconds{20'000}), "20us");
  for (const char* text : {"1.5s", "20us", "7ns", "2h", "1m30s"})
    EXPECT_EQ(parse_duration(format_duration(parse_duration(text))), parse_duration(text)) << text;
}

TEST(FormatSize, PicksLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(4096), "4K");
  EXPECT_EQ(format_size(1536), "1536");
  EXPECT_EQ(format_size(256u << 20), "256M");
  EXPECT_EQ(format_size(1ull << 40), "1T");
  for (uint64_t bytes : {0ull, 1ull, 4096ull, 1536ull, 3ull << 30})
    EXPECT_EQ(parse_size(format_size(bytes)), bytes);
}

TEST(ParseIpv4, DottedQuad) {
  EXPECT_EQ(parse_ipv4("10.0.0.1").host_order, 0x0a000001u);
  EXPECT_EQ(parse_ipv4("255.255.255.0").host_order, 0xffffff00u);
  EXPECT_EQ(parse_ipv4("0.0.0.0").host_order, 0u);
  EXPECT_EQ(parse_ipv4("192.168.1.10").to_string(), "192.168.1.10");
}

TEST(ParseIpv4, RejectsBadAddresses) {
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.-4", "a.b.c.d", "1..2.3",
                          "01.2.3.4", "1.2.3.4 x", "1234.1.1.1", "1.2.3.4."})
    EXPECT_THROW(parse_ipv4(bad), ConfigError) << bad;
}

TEST(ParseCpuList, RangesSortedAndDeduplicated) {
  EXPECT_EQ(parse_cpu_list("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(parse_cpu_list("6, 1"), (std::vector<int>{1, 6}));
  EXPECT_EQ(parse_cpu_list("2,0-2"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("1023").back(), 1023);
}

TEST(ParseCpuList, RejectsBadLists) {
  for (const char* bad : {"a", "3-1", "1-", "-1", "1,,2", "1024", "0-99999999", "1.5", ","})
    EXPECT_THROW(parse_cpu_list(bad), ConfigError) << bad;
}

TEST(ParseErrors, QuoteInputOnOneLine) {
  try {
    parse_int("12\n34");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "'12\\x0a34' is not an integer");
  }
  try {
    parse_int(std::string(200, '9'));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_LT(std::string(e.what()).size(), 120u);
  }
}

}  // namespace
}  // namespace bypass::config
