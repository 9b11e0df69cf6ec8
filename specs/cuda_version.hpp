#pragma once
// A CUDA toolkit/runtime version (major.minor) and its wheel-variant spelling ("cu128").
#include <compare>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace envfix::specs {

struct CudaVersion {
  int major = 0;
  int minor = 0;

  // "12.8"; a patch component ("13.0.88") is accepted and dropped.
  [[nodiscard]] static Expected<CudaVersion> parse(std::string_view text);
  // "cu128" → 12.8, "cu130" → 13.0, "cu92" → 9.2 (the last digit is the minor).
  [[nodiscard]] static Expected<CudaVersion> from_variant(std::string_view variant);
  [[nodiscard]] std::string to_string() const; // "12.8"
  [[nodiscard]] std::string variant() const;   // "cu128"
  auto operator<=>(const CudaVersion&) const = default;
};

// ZSTD-compressed fatbin entries need a driver for at least this CUDA (docs/architecture.md, Kernel
// coverage): one constant for the kernel gate and doctor.
inline constexpr CudaVersion kZstdMinCuda{12, 4};

} // namespace envfix::specs
