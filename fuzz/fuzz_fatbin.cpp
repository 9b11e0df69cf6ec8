// libFuzzer target: wheel::read_kernels over untrusted bytes (ELF, ar, raw fatbin, cubin).
// Seeds in fuzz/corpus/fatbin/: an nvcc -rdc object, an ar archive of two, raw .nv_fatbin sections.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "wheel/coverage.hpp"
#include "wheel/kernel_set.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto ks = envfix::wheel::read_kernels(std::span<const std::uint8_t>(data, size), "fuzz-input");
  if (ks) {
    // Exercise the queries too: they must not crash on whatever parsed.
    (void)ks->sass();
    (void)ks->ptx();
    (void)ks->lto();
    (void)ks->has_zstd();
    // The coverage model over whatever parsed: counts add up, the verdict agrees with them, and the
    // profile kept as evidence reads back equal.
    const auto profile = envfix::wheel::KernelProfile::of(*ks);
    for (auto cc : {envfix::specs::ComputeCapability{9, 0}, envfix::specs::ComputeCapability{12, 0}}) {
      auto c = envfix::wheel::coverage(profile, cc);
      if (c.total() != profile.containers()) __builtin_trap();
      if ((c.verdict == envfix::wheel::Verdict::none) != (c.runnable() == 0)) __builtin_trap();
    }
    auto back = envfix::wheel::KernelProfile::from_json(profile.to_json());
    if (!back || !(*back == profile)) __builtin_trap();
  }
  // Windowed reading with a release hook (what read_kernels_file does) must find the same, and
  // release only bytes of the input.
  envfix::wheel::ReadOptions o;
  o.window = 1 + (size ? data[size / 2] : 0) % 97;
  o.release = [&](std::size_t off, std::size_t len) {
    if (off > size || len > size - off) __builtin_trap();
  };
  auto windowed = envfix::wheel::read_kernels(std::span<const std::uint8_t>(data, size), "fuzz-input", o);
  if (ks.has_value() != windowed.has_value()) __builtin_trap();
  if (ks) {
    auto flat = [](const envfix::wheel::KernelSet& k) {
      std::vector<std::string> out = k.warnings;
      for (const auto& c : k.containers) {
        out.push_back(c.section + "@" + std::to_string(c.offset) + "/" + c.member);
        for (const auto& e : c.entries) out.push_back(e.arch.to_string() + "@" + std::to_string(e.offset));
      }
      return out;
    };
    if (flat(*ks) != flat(*windowed)) __builtin_trap();
  } else if (ks.error().message != windowed.error().message) {
    __builtin_trap();
  }
  return 0;
}
