// libFuzzer target: kernel-evidence build records read back from <cache>/evidence-v2
// (wheel/kernel_evidence.hpp). Invariants: no crash and no exception escaping (a wrong JSON type is a
// missing record, never an abort); a record that parses names a well-formed sha256 or none.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "wheel/kernel_evidence.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto e = envfix::wheel::parse_build_record(text)) {
    if (!e->sha256.empty() && e->sha256.size() != 64) std::abort();
    for (const auto& f : e->files) (void)f.profile.to_json().dump();
  }
  return 0;
}
