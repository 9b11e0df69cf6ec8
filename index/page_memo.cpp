#include "index/page_memo.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/sha256.hpp"

namespace envfix::index {

std::string PageMemo::key_of(std::vector<std::string> urls) {
  std::sort(urls.begin(), urls.end());
  urls.erase(std::unique(urls.begin(), urls.end()), urls.end());
  std::string joined;
  for (const auto& u : urls) joined.append(u).push_back('\n');
  return util::sha256_hex(joined);
}

Expected<PageMemo> PageMemo::parse(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  auto bad = [](std::string what) {
    return make_error(ErrorCode::invalid_input, "page memo: " + what, "it is a cache hint: delete the file");
  };
  if (j.is_discarded() || !j.is_object() || j.value("version", 0) != 1 || !j.contains("pages") || !j["pages"].is_array())
    return bad("not a version-1 memo");
  PageMemo m;
  for (const auto& e : j["pages"]) {
    if (!e.is_object() || !e.contains("url") || !e["url"].is_string() || !e.contains("index_url") ||
        !e["index_url"].is_string() || !e.contains("project") || !e["project"].is_string())
      return bad("an entry lacks url, index_url or project");
    m.add({e["url"].get<std::string>(), e["index_url"].get<std::string>(), e["project"].get<std::string>(),
           e.value("find_links", false)});
  }
  return m;
}

std::string PageMemo::to_json() const {
  nlohmann::json pages = nlohmann::json::array();
  for (const auto& e : entries) {
    nlohmann::json o = {{"url", e.url}, {"index_url", e.index_url}, {"project", e.project}};
    if (e.find_links) o["find_links"] = true;
    pages.push_back(std::move(o));
  }
  return nlohmann::json{{"version", 1}, {"pages", std::move(pages)}}.dump(1);
}

bool PageMemo::add(Entry e) {
  if (entries.size() >= max_entries || contains(e.url)) return false;
  entries.push_back(std::move(e));
  return true;
}

bool PageMemo::contains(std::string_view url) const {
  return std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.url == url; });
}

} // namespace envfix::index
