// Round-trip property: if Version::parse succeeds, to_string parses back to an equal value with the
// same text, and ordering is consistent with equality.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specs/version.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto v = envfix::specs::Version::parse(text);
  if (!v) return 0;
  auto s = v->to_string();
  auto back = envfix::specs::Version::parse(s);
  if (!back || !(*back == *v) || back->to_string() != s) std::abort();
  if ((*v <=> *back) != 0 || *v < *back) std::abort();
  if (v->public_version() > *v || v->base_version().has_local()) std::abort();
  return 0;
}
