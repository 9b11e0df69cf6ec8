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

// Every field is checked for its type before it is read: the memo is a file in the cache, and a
// wrong type read with value()/get() throws nlohmann's type_error, which aborted every page call.
Expected<PageMemo> PageMemo::parse(std::string_view json) {
  auto bad = [](std::string what) {
    return make_error(ErrorCode::invalid_input, "page memo: " + what, "it is a cache hint: delete the file");
  };
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  const auto v = j.find("version");
  const auto pages = j.find("pages");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != 1 || pages == j.end() || !pages->is_array())
    return bad("not a version-1 memo");
  auto text = [](const nlohmann::json& e, const char* key) -> const std::string* {
    auto it = e.find(key);
    return it != e.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
  };
  PageMemo m;
  for (const auto& e : *pages) {
    if (!e.is_object()) return bad("an entry is not an object");
    const std::string* url = text(e, "url");
    const std::string* index_url = text(e, "index_url");
    const std::string* project = text(e, "project");
    if (!url || !index_url || !project) return bad("an entry lacks url, index_url or project");
    const auto fl = e.find("find_links");
    if (fl != e.end() && !fl->is_boolean()) return bad("an entry's find_links is not true or false");
    m.add({*url, *index_url, *project, fl != e.end() && fl->get<bool>()});
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
