#include "index/page_cache.hpp"

#include <tuple>

#include <nlohmann/json.hpp>

#include "util/sha256.hpp"

namespace envfix::index {

std::string page_headers_json(const CachedPage& p) {
  nlohmann::json j = {{"content_type", p.content_type},
                      {"etag", p.etag},
                      {"last_modified", p.last_modified},
                      {"final_url", p.final_url},
                      {"stored_at", p.stored_at},
                      {"no_cache", p.no_cache},
                      {"body_sha256", util::sha256_hex(p.body)},
                      {"credentials", p.credentials}};
  if (p.max_age) j["max_age"] = *p.max_age;
  if (p.heuristic_max_age) j["heuristic_max_age"] = *p.heuristic_max_age;
  return j.dump();
}

Expected<CachedPage> parse_page_headers(std::string_view json) {
  auto bad = [](std::string what) {
    return make_error(ErrorCode::invalid_input, "page cache headers: " + what, "the page is fetched again; or delete the file");
  };
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  CachedPage p;
  // Strings: absent is "", anything but a string is damage. body_sha256 and credentials are required.
  for (auto [key, out, required] : {std::tuple{"content_type", &p.content_type, false},
                                    {"etag", &p.etag, false},
                                    {"last_modified", &p.last_modified, false},
                                    {"final_url", &p.final_url, false},
                                    {"credentials", &p.credentials, true},
                                    {"body_sha256", &p.body_sha256, true}}) {
    auto it = j.find(key);
    if (it == j.end() && !required) continue;
    if (it == j.end() || !it->is_string()) return bad(fmt::format("'{}' is not a string", key));
    *out = it->get<std::string>();
  }
  for (auto [key, out] : {std::pair{"max_age", &p.max_age}, {"heuristic_max_age", &p.heuristic_max_age}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_number_integer()) return bad(fmt::format("'{}' is not an integer", key));
    *out = it->get<std::int64_t>();
  }
  if (auto it = j.find("stored_at"); it != j.end()) {
    if (!it->is_number_integer()) return bad("'stored_at' is not an integer");
    p.stored_at = it->get<std::int64_t>();
  }
  if (auto it = j.find("no_cache"); it != j.end()) {
    if (!it->is_boolean()) return bad("'no_cache' is not true or false");
    p.no_cache = it->get<bool>();
  }
  return p;
}

} // namespace envfix::index
