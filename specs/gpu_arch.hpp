#pragma once
// GPU compute capabilities and the code targets embedded in CUDA binaries (docs/kernels.md, Arch
// names and Runs-on rules).
#include <compare>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace envfix::specs {

// A device's compute capability, e.g. 9.0 (H100/H200) or 12.0 (RTX 50xx), and whether the device
// is an integrated Tegra GPU (Jetson): those have no SASS compatibility between minor versions
// (docs/kernels.md, Runs-on rules).
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  bool tegra = false;

  // Accepts "9.0", "12.0", "90", "120", "sm_90", "compute_90" (no a/f suffix: a device has none),
  // each optionally after "tegra:" for an integrated device ("tegra:8.7").
  [[nodiscard]] static Expected<ComputeCapability> parse(std::string_view text);
  [[nodiscard]] std::string to_string() const; // "9.0" (the number alone, as arch lists want it)
  [[nodiscard]] std::string sm_name() const;   // "sm_90"
  [[nodiscard]] std::string spec() const;      // parse() reads it back: "9.0", "tegra:8.7"
  // The same compute capability, whatever the device kind.
  [[nodiscard]] bool same_number(const ComputeCapability& o) const { return major == o.major && minor == o.minor; }
  [[nodiscard]] int number() const { return major * 10 + minor; } // 90, 120
  auto operator<=>(const ComputeCapability&) const = default;
};

// One embedded code target: SASS (sm_XY), PTX (compute_XY) or LTO-IR (lto_XY), with the
// arch-specific `a` or family-specific `f` variant.
struct GpuArch {
  enum class Kind { sass, ptx, lto };
  enum class Variant { plain, a, f };
  Kind kind = Kind::sass;
  int major = 0;
  int minor = 0;
  Variant variant = Variant::plain;

  // "sm_90", "sm_90a", "sm_100f", "compute_120f", "lto_90".
  [[nodiscard]] static Expected<GpuArch> parse(std::string_view text);
  // From a fatbin entry's decimal arch number (e.g. 120 → 12.0).
  [[nodiscard]] static GpuArch from_number(Kind kind, int number, Variant variant = Variant::plain);
  [[nodiscard]] std::string to_string() const;
  // Can a device of compute capability `cc` load this code (SASS directly, PTX by JIT)?
  // docs/kernels.md, Runs-on rules.
  [[nodiscard]] bool runs_on(ComputeCapability cc) const;
  // Arch numbers only Tegra parts have (5.3, 6.2, 7.2, 8.7, 10.1, 11.0): their SASS never runs on
  // a discrete GPU.
  [[nodiscard]] bool tegra_only() const;
  [[nodiscard]] ComputeCapability cc() const { return {major, minor}; }
  [[nodiscard]] int number() const { return major * 10 + minor; }
  auto operator<=>(const GpuArch&) const = default;
};

[[nodiscard]] const char* to_string(GpuArch::Kind kind); // "sass", "ptx", "lto"

} // namespace envfix::specs
