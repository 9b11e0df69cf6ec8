#include "specs/gpu_arch.hpp"

#include <cctype>
#include <charconv>

#include <fmt/core.h>

#include "util/strings.hpp"

namespace envfix::specs {
namespace {

using util::lower;

// `text` with a caret under position `pos`, for parse errors.
std::string caret(std::string_view text, std::size_t pos) {
  return fmt::format("\n    {}\n    {}^", text, std::string(std::min(pos, text.size()), ' '));
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "90" → 9.0, "120" → 12.0: the last digit is the minor (as in nvcc's sm_XY names).
bool split_number(std::string_view digits, int& major, int& minor) {
  if (!all_digits(digits) || digits.size() < 2 || digits.size() > 3) return false;
  int n = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), n);
  major = n / 10;
  minor = n % 10;
  return major > 0;
}

} // namespace

Expected<ComputeCapability> ComputeCapability::parse(std::string_view text) {
  if (lower(text).starts_with("tegra:")) {
    auto cc = parse(text.substr(6));
    if (!cc) return cc;
    cc->tegra = true;
    return cc;
  }
  const std::string s = lower(text);
  std::string_view v = s;
  std::size_t skipped = 0;
  for (std::string_view prefix : {"sm_", "compute_"}) {
    if (v.starts_with(prefix)) {
      v.remove_prefix(prefix.size());
      skipped = prefix.size();
      break;
    }
  }
  ComputeCapability cc;
  if (auto dot = v.find('.'); dot != std::string_view::npos && skipped == 0) {
    auto maj = v.substr(0, dot), min = v.substr(dot + 1);
    if (!all_digits(maj) || maj.size() > 2)
      return fail(ErrorCode::invalid_input, "invalid compute capability '{}': bad major{}", text, caret(text, 0));
    if (!all_digits(min) || min.size() != 1)
      return fail(ErrorCode::invalid_input, "invalid compute capability '{}': the minor must be one digit{}", text,
                  caret(text, dot + 1));
    std::from_chars(maj.data(), maj.data() + maj.size(), cc.major);
    cc.minor = min[0] - '0';
    if (cc.major == 0) return fail(ErrorCode::invalid_input, "invalid compute capability '{}': major 0{}", text, caret(text, 0));
    return cc;
  }
  if (!split_number(v, cc.major, cc.minor)) {
    std::size_t bad = skipped;
    while (bad < s.size() && std::isdigit(static_cast<unsigned char>(s[bad]))) ++bad;
    if (bad == s.size()) bad = skipped;
    return make_error(ErrorCode::invalid_input, util::msg("invalid compute capability '{}'{}", text, caret(text, bad)),
                      util::msg("write it as 9.0, 90 or sm_90 (a GPU has no a/f suffix)"));
  }
  return cc;
}

std::string ComputeCapability::to_string() const { return fmt::format("{}.{}", major, minor); }
std::string ComputeCapability::sm_name() const { return fmt::format("sm_{}{}", major, minor); }
std::string ComputeCapability::spec() const { return tegra ? "tegra:" + to_string() : to_string(); }

const char* to_string(GpuArch::Kind kind) {
  switch (kind) {
  case GpuArch::Kind::sass: return "sass";
  case GpuArch::Kind::ptx: return "ptx";
  case GpuArch::Kind::lto: return "lto";
  }
  return "?";
}

Expected<GpuArch> GpuArch::parse(std::string_view text) {
  const std::string s = lower(text);
  std::string_view v = s;
  GpuArch a;
  std::size_t prefix_len = 0;
  if (v.starts_with("sm_")) {
    a.kind = Kind::sass, prefix_len = 3;
  } else if (v.starts_with("compute_")) {
    a.kind = Kind::ptx, prefix_len = 8;
  } else if (v.starts_with("lto_")) {
    a.kind = Kind::lto, prefix_len = 4;
  } else {
    return make_error(ErrorCode::invalid_input,
                      util::msg("invalid GPU arch '{}': expected sm_, compute_ or lto_{}", text, caret(text, 0)),
                      util::msg("examples: sm_90, sm_90a, sm_100f, compute_80, lto_90"));
  }
  v.remove_prefix(prefix_len);
  if (!v.empty() && (v.back() == 'a' || v.back() == 'f')) {
    a.variant = v.back() == 'a' ? Variant::a : Variant::f;
    v.remove_suffix(1);
  }
  if (!split_number(v, a.major, a.minor)) {
    std::size_t bad = prefix_len;
    while (bad < s.size() && std::isdigit(static_cast<unsigned char>(s[bad]))) ++bad;
    if (bad == s.size() || (bad == prefix_len + v.size() && a.variant != Variant::plain)) bad = prefix_len;
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("invalid GPU arch '{}': expected a 2- or 3-digit number after the prefix{}", text, caret(text, bad)),
        "examples: sm_90, sm_90a, sm_100f, compute_80, lto_90");
  }
  if (a.kind == Kind::lto && a.variant != Variant::plain)
    return fail(ErrorCode::invalid_input, "invalid GPU arch '{}': LTO-IR has no a/f variant{}", text, caret(text, s.size() - 1));
  return a;
}

GpuArch GpuArch::from_number(Kind kind, int number, Variant variant) { return GpuArch{kind, number / 10, number % 10, variant}; }

std::string GpuArch::to_string() const {
  const char* prefix = kind == Kind::sass ? "sm_" : kind == Kind::ptx ? "compute_" : "lto_";
  const char* suffix = variant == Variant::a ? "a" : variant == Variant::f ? "f" : "";
  return fmt::format("{}{}{}{}", prefix, major, minor, suffix);
}

bool GpuArch::tegra_only() const {
  switch (number()) {
  case 53:
  case 62:
  case 72:
  case 87:
  case 101:
  case 110: return true;
  default: return false;
  }
}

bool GpuArch::runs_on(ComputeCapability dev) const {
  const bool same_major_not_older = dev.major == major && dev.minor >= minor;
  const bool exact = dev.same_number(cc());
  switch (kind) {
  case Kind::lto: return false; // input for nvJitLink, never loaded directly
  case Kind::sass:
    // SASS never crosses majors; `a` is exact; `f` is the same rule as plain for SASS. Tegra has
    // no SASS compatibility between minors, nor with desktop parts (the CUDA Programming Guide,
    // "Binary Compatibility"): an sm_80 cubin does not load on an Orin (8.7).
    if (variant == Variant::a || dev.tegra) return exact;
    if (tegra_only()) return false;
    return same_major_not_older;
  case Kind::ptx:
    if (variant == Variant::a) return exact;
    if (variant == Variant::f) return same_major_not_older;
    return dev.major > major || (dev.major == major && dev.minor >= minor); // plain PTX JITs on any later device
  }
  return false;
}

} // namespace envfix::specs
