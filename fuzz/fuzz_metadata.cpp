// Core metadata: parsing never crashes; fields survive a re-parse of their requirements.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specs/metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto fields = envfix::specs::parse_rfc822(text);
  auto md = envfix::specs::CoreMetadata::parse(text);
  if (md) {
    if (!fields) std::abort(); // CoreMetadata accepts only what parse_rfc822 accepts
    if (fields->size() != md->fields.size()) std::abort();
    for (const auto& q : md->requires_dist) {
      auto back = envfix::specs::Requirement::parse(q.to_string());
      if (!back || !(*back == q)) std::abort();
    }
    auto v = envfix::specs::Version::parse(md->version.to_string());
    if (!v || !(*v == md->version)) std::abort();
  }
  return 0;
}
