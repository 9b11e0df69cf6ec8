// libFuzzer target: RECORD and WHEEL files read from untrusted wheels and installed trees.
// Invariants: no crash; a parsed RECORD writes back to CSV that parses to the same entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "wheel/record.hpp"
#include "wheel/wheel_info.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto rec = envfix::wheel::Record::parse(text, "RECORD")) {
    auto again = envfix::wheel::Record::parse(rec->to_string(), "RECORD");
    if (!again || again->entries != rec->entries) std::abort();
  }
  if (auto info = envfix::wheel::WheelInfo::parse(text, "WHEEL")) {
    auto again = envfix::wheel::WheelInfo::parse(info->to_string(), "WHEEL");
    if (!again || again->tags != info->tags || again->root_is_purelib != info->root_is_purelib) std::abort();
  }
  return 0;
}
