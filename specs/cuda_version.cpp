#include "specs/cuda_version.hpp"

#include <charconv>

#include <fmt/core.h>

namespace envfix::specs {
namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  std::from_chars(s.data(), s.data() + s.size(), out);
  return true;
}

} // namespace

Expected<CudaVersion> CudaVersion::parse(std::string_view text) {
  CudaVersion v;
  auto dot = text.find('.');
  if (dot == std::string_view::npos || !parse_int(text.substr(0, dot), v.major) || v.major == 0)
    return make_error(ErrorCode::invalid_input, util::msg("invalid CUDA version '{}': expected MAJOR.MINOR", text),
                      util::msg("e.g. 12.8"));
  auto rest = text.substr(dot + 1);
  auto dot2 = rest.find('.');
  int patch = 0;
  if (!parse_int(rest.substr(0, dot2), v.minor) || (dot2 != std::string_view::npos && !parse_int(rest.substr(dot2 + 1), patch)))
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("invalid CUDA version '{}': expected MAJOR.MINOR\n    {}\n    {}^", text, text, std::string(dot + 1, ' ')),
        "e.g. 12.8");
  return v;
}

Expected<CudaVersion> CudaVersion::from_variant(std::string_view variant) {
  auto digits = variant.starts_with("cu") ? variant.substr(2) : std::string_view{};
  int n = 0;
  if (digits.size() < 2 || digits.size() > 3 || !parse_int(digits, n) || n < 10)
    return make_error(ErrorCode::invalid_input, util::msg("'{}' is not a CUDA variant", variant),
                      util::msg("CUDA variants look like cu118, cu128, cu130"));
  return CudaVersion{n / 10, n % 10};
}

std::string CudaVersion::to_string() const { return fmt::format("{}.{}", major, minor); }
std::string CudaVersion::variant() const { return fmt::format("cu{}{}", major, minor); }

} // namespace envfix::specs
