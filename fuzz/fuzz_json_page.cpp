// libFuzzer target: PEP 691 JSON project pages (untrusted network input) -> Candidates.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "index/project_page.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  envfix::index::PageContext ctx{
      .page_url = "https://example.org/simple/torch/", .project = "torch", .index_url = "https://example.org/simple"};
  auto page = envfix::index::parse_json_page(text, ctx);
  if (page) {
    for (const auto& c : page->candidates)
      if (c.url.find('#') != std::string::npos) __builtin_trap();
  }
  return 0;
}
