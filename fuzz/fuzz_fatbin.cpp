// libFuzzer target: wheel::read_kernels over untrusted bytes (ELF, ar, raw fatbin, cubin).
// Seeds in fuzz/corpus/fatbin/: an nvcc -rdc object, an ar archive of two, raw .nv_fatbin sections.
#include <cstddef>
#include <cstdint>
#include <span>

#include "wheel/kernel_set.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto ks = envfix::wheel::read_kernels(std::span<const std::uint8_t>(data, size), "fuzz-input");
  if (ks) {
    // Exercise the queries too: they must not crash on whatever parsed.
    (void)ks->sass();
    (void)ks->ptx();
    (void)ks->lto();
    (void)ks->has_zstd();
    (void)ks->coverage({9, 0});
    (void)ks->coverage({12, 0});
  }
  return 0;
}
