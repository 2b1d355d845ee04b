// Text parsers for option values. Each accepts exactly one spelling family and rejects everything
// else with a message that quotes the input and shows an accepted example.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <set>

#include "config/config.h"
#include "config/option_value.h"

namespace bypass::config {

namespace {

__extension__ typedef unsigned __int128 Wide;

constexpr size_t kMaxQuotedInput = 64;
constexpr int kMaxCpu = 1023;  // CPU_SETSIZE - 1: the largest CPU a cpu_set_t can name

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A decimal number with an optional fraction: "12", "1.5", ".5". Digits only (no sign, no exponent).
struct Decimal {
  Wide integer = 0;      // integer part
  Wide fraction = 0;     // fraction digits as an integer
  Wide fraction_scale = 1;  // 10^(number of fraction digits)
};

// Reads a Decimal from the front of `text`, advancing it. Returns false if no digit is there or
// the number has more digits than can be represented exactly.
bool read_decimal(std::string_view& text, Decimal& out) {
  size_t pos = 0;
  size_t int_digits = 0;
  size_t frac_digits = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (++int_digits > 20) return false;
    out.integer = out.integer * 10 + static_cast<unsigned>(text[pos] - '0');
    ++pos;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && is_digit(text[pos])) {
      if (++frac_digits > 18) return false;
      out.fraction = out.fraction * 10 + static_cast<unsigned>(text[pos] - '0');
      out.fraction_scale *= 10;
      ++pos;
    }
  }
  if (int_digits + frac_digits == 0) return false;
  text.remove_prefix(pos);
  return true;
}

// value * unit, exactly; false if the result is not a whole number.
bool scale_exact(const Decimal& d, Wide unit, Wide& out) {
  Wide frac_units = d.fraction * unit;
  if (frac_units % d.fraction_scale != 0) return false;
  out = d.integer * unit + frac_units / d.fraction_scale;
  return true;
}

}  // namespace

namespace detail {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string quote_input(std::string_view text) {
  std::string out = "'";
  size_t shown = 0;
  for (char c : text) {
    if (shown++ == kMaxQuotedInput) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace detail

using detail::quote_input;

bool parse_bool(std::string_view text) {
  const std::string word = lower(detail::trim(text));
  if (word == "true" || word == "yes" || word == "on" || word == "1") return true;
  if (word == "false" || word == "no" || word == "off" || word == "0") return false;
  throw ConfigError(quote_input(text) + " is not a boolean (use true/false, yes/no, on/off, 1/0)");
}

int64_t parse_int(std::string_view text) {
  std::string_view body = detail::trim(text);
  bool negative = false;
  if (!body.empty() && (body.front() == '-' || body.front() == '+')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  int base = 10;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    base = 16;
    body.remove_prefix(2);
  }
  uint64_t magnitude = 0;
  auto [end, error] = std::from_chars(body.data(), body.data() + body.size(), magnitude, base);
  if (body.empty() || error == std::errc::invalid_argument || end != body.data() + body.size())
    throw ConfigError(quote_input(text) + " is not an integer");
  const uint64_t limit = negative ? uint64_t{1} << 63 : static_cast<uint64_t>(INT64_MAX);
  if (error == std::errc::result_out_of_range || magnitude > limit)
    throw ConfigError(quote_input(text) + " does not fit in a 64-bit integer");
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

uint64_t parse_size(std::string_view text) {
  const std::string message =
      quote_input(text) + " is not a size (use bytes or K/M/G/T, e.g. 512, 4K, 1M, 2GiB)";
  std::string_view rest = detail::trim(text);
  Decimal number;
  if (!read_decimal(rest, number)) throw ConfigError(message);
  const std::string unit = lower(detail::trim(rest));
  // Units are binary (1K = 1024), whether written K, KB or KiB: buffer and memory sizes are
  // always meant in powers of two here.
  static const std::pair<const char*, int> kUnits[] = {
      {"", 0}, {"b", 0},  {"k", 10}, {"kb", 10}, {"kib", 10}, {"m", 20}, {"mb", 20}, {"mib", 20},
      {"g", 30}, {"gb", 30}, {"gib", 30}, {"t", 40}, {"tb", 40}, {"tib", 40}};
  for (const auto& [name, shift] : kUnits) {
    if (unit != name) continue;
    Wide bytes = 0;
    if (!scale_exact(number, Wide{1} << shift, bytes))
      throw ConfigError(quote_input(text) + " is not a whole number of bytes");
    if (bytes > UINT64_MAX) throw ConfigError(quote_input(text) + " is too large");
    return static_cast<uint64_t>(bytes);
  }
  throw ConfigError(message);
}

std::chrono::nanoseconds parse_duration(std::string_view text) {
  const std::string message = quote_input(text) +
                              " is not a duration (use a number with ns, us, ms, s, m or h, "
                              "e.g. 200ms, 1.5s, 1m30s)";
  std::string_view rest = detail::trim(text);
  if (rest == "0") return std::chrono::nanoseconds{0};
  if (rest.empty()) throw ConfigError(message);
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"ns", 1},
      {"us", 1'000},
      {"\xc2\xb5s", 1'000},  // µs
      {"ms", 1'000'000},
      {"s", 1'000'000'000},
      {"m", 60'000'000'000},
      {"h", 3'600'000'000'000}};
  Wide total = 0;
  // A duration is one or more number+unit terms ("1m30s"), at most seven of them.
  for (int terms = 0; !rest.empty(); ++terms) {
    Decimal number;
    if (terms == 7 || !read_decimal(rest, number)) throw ConfigError(message);
    size_t unit_len = 0;
    while (unit_len < rest.size() && !is_digit(rest[unit_len]) && rest[unit_len] != '.') ++unit_len;
    const std::string unit = lower(rest.substr(0, unit_len));
    rest.remove_prefix(unit_len);
    int64_t unit_ns = 0;
    for (const auto& [name, ns] : kUnits)
      if (unit == name) unit_ns = ns;
    if (unit_ns == 0) throw ConfigError(message);
    Wide term = 0;
    if (!scale_exact(number, static_cast<Wide>(unit_ns), term))
      throw ConfigError(quote_input(text) + " is finer than one nanosecond");
    total += term;
    if (total > static_cast<Wide>(INT64_MAX)) throw ConfigError(quote_input(text) + " is too long");
  }
  return std::chrono::nanoseconds{static_cast<int64_t>(total)};
}

Ipv4 parse_ipv4(std::string_view text) {
  const std::string message = quote_input(text) + " is not an IPv4 address (e.g. 192.168.1.10)";
  std::string_view rest = detail::trim(text);
  uint32_t address = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (rest.empty() || rest.front() != '.') throw ConfigError(message);
      rest.remove_prefix(1);
    }
    size_t digits = 0;
    unsigned octet = 0;
    while (digits < rest.size() && is_digit(rest[digits])) {
      if (digits == 3) throw ConfigError(message);
      octet = octet * 10 + static_cast<unsigned>(rest[digits] - '0');
      ++digits;
    }
    // A leading zero ("010") is octal to inet_aton and decimal to humans: refuse the ambiguity.
    if (digits == 0 || octet > 255 || (digits > 1 && rest[0] == '0')) throw ConfigError(message);
    rest.remove_prefix(digits);
    address = (address << 8) | octet;
  }
  if (!rest.empty()) throw ConfigError(message);
  return Ipv4{address};
}

std::vector<int> parse_cpu_list(std::string_view text) {
  const std::string message =
      quote_input(text) + " is not a CPU list (e.g. 0-3,6; CPUs 0.." + std::to_string(kMaxCpu) + ")";
  std::string_view rest = detail::trim(text);
  std::set<int> cpus;
  if (rest.empty()) return {};
  auto read_cpu = [&](std::string_view item) {
    item = detail::trim(item);
    int cpu = -1;
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), cpu);
    if (item.empty() || error != std::errc{} || end != item.data() + item.size() || cpu < 0 ||
        cpu > kMaxCpu)
      throw ConfigError(message);
    return cpu;
  };
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.insert(read_cpu(item));
    } else {
      const int first = read_cpu(item.substr(0, dash));
      const int last = read_cpu(item.substr(dash + 1));
      if (first > last) throw ConfigError(message + ": range " + std::string(item) + " is reversed");
      for (int cpu = first; cpu <= last; ++cpu) cpus.insert(cpu);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return {cpus.begin(), cpus.end()};
}

std::string format_size(uint64_t bytes) {
  static const std::pair<const char*, int> kUnits[] = {{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}};
  if (bytes == 0) return "0";
  for (const auto& [name, shift] : kUnits) {
    const uint64_t unit = uint64_t{1} << shift;
    if (bytes % unit == 0) return std::to_string(bytes / unit) + name;
  }
  return std::to_string(bytes);
}

std::string format_duration(std::chrono::nanoseconds d) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"h", 3'600'000'000'000}, {"m", 60'000'000'000}, {"s", 1'000'000'000},
      {"ms", 1'000'000},        {"us", 1'000},         {"ns", 1}};
  const int64_t ns = d.count();
  if (ns == 0) return "0s";
  for (const auto& [name, unit] : kUnits)
    if (ns % unit == 0) return std::to_string(ns / unit) + name;
  return std::to_string(ns) + "ns";
}

}  // namespace bypass::config
