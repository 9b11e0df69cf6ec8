// Round-trip property for SpecifierSet; membership must not depend on which text form was parsed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specs/specifier.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // "<specifier set>|<version>" exercises contains() too.
  auto bar = text.find('|');
  auto set = envfix::specs::SpecifierSet::parse(text.substr(0, bar));
  if (!set) return 0;
  auto s = set->to_string();
  auto back = envfix::specs::SpecifierSet::parse(s);
  if (!back || !(*back == *set) || back->to_string() != s) std::abort();
  if (bar != std::string_view::npos) {
    auto v = envfix::specs::Version::parse(text.substr(bar + 1));
    if (v) {
      for (bool pre : {false, true})
        if (set->contains(*v, pre) != back->contains(*v, pre)) std::abort();
      if (set->contains(*v, false) && !set->contains(*v, true)) std::abort();
    }
  }
  return 0;
}
