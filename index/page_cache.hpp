#pragma once
// One cached project page as the page cache stores it (<cache>/http-v1/pages/<key>.body and the
// headers beside it in <key>.json, index/index_client.cpp): the headers are read back from a file
// anyone who can write the cache may have changed, so they are parsed with every type checked.
// Pure value type: parse and print, no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace envfix::index {

struct CachedPage {
  std::string body, content_type, etag, last_modified, final_url;
  std::int64_t stored_at = 0;
  std::optional<std::int64_t> max_age;
  std::optional<std::int64_t> heuristic_max_age; // no explicit lifetime: from Last-Modified
  bool no_cache = false;
  std::string credentials; // digest of the credentials the page was fetched with ("" for none)
  std::string body_sha256; // as the headers file records it (parse); page_headers_json writes the body's
};

// The headers file of `p` (its body's sha256 included).
[[nodiscard]] std::string page_headers_json(const CachedPage& p);
// The headers of a stored page (the body left empty): an error for a file that is not JSON, or has a
// field of the wrong type or out of range, never an exception.
[[nodiscard]] Expected<CachedPage> parse_page_headers(std::string_view json);

} // namespace envfix::index
