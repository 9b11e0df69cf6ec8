// libFuzzer target: PEP 503 HTML project pages (untrusted network input) -> Candidates.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "index/project_page.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 256 * 1024) return 0; // gumbo is quadratic in nesting depth; pages are size-limited
  std::string_view text(reinterpret_cast<const char*>(data), size);
  envfix::index::PageContext ctx{
      .page_url = "https://example.org/simple/torch/", .project = "torch", .index_url = "https://example.org/simple"};
  auto page = envfix::index::parse_html_page(text, ctx);
  if (page) {
    for (const auto& c : page->candidates) {
      // Invariants: absolute http(s)/file URL without fragment, non-empty filename.
      if (c.filename.empty() || c.url.find('#') != std::string::npos) __builtin_trap();
      (void)c.is_wheel();
    }
  }
  ctx.filter_by_project = true;
  (void)envfix::index::parse_html_page(text, ctx);
  return 0;
}
