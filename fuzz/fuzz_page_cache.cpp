// libFuzzer target: the page cache's files read back from disk (index/page_cache.hpp headers and
// index/page_memo.hpp memos), which anyone who can write the cache may have changed: any bytes give a
// value or an Error, never an exception; a value prints and parses back to itself.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "index/page_cache.hpp"
#include "index/page_memo.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto memo = envfix::index::PageMemo::parse(text)) {
    auto again = envfix::index::PageMemo::parse(memo->to_json());
    if (!again || !(*again == *memo)) __builtin_trap();
  }
  if (auto h = envfix::index::parse_page_headers(text)) {
    auto again = envfix::index::parse_page_headers(envfix::index::page_headers_json(*h));
    if (!again || again->etag != h->etag || again->stored_at != h->stored_at || again->max_age != h->max_age ||
        again->credentials != h->credentials || again->no_cache != h->no_cache)
      __builtin_trap();
  }
  return 0;
}
