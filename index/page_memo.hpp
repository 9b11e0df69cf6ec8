#pragma once
// The project pages one run asked for, remembered under the way that run began (its first page call),
// so that the next run beginning the same way revalidates all of them in its first round instead of
// one round per level of the dependency tree (docs/installing.md, "Project pages"). A hint only:
// a page the memo names that is no longer needed costs one small request; a page it lacks is fetched
// when the resolver asks, as without the memo. Pure value type: parse and print, no I/O.
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::index {

struct PageMemo {
  struct Entry {
    std::string url;       // the page's URL, never with credentials (such pages are not remembered)
    std::string index_url; // the index or find-links location it belongs to
    std::string project;
    bool find_links = false;
    bool operator==(const Entry&) const = default;
  };
  std::vector<Entry> entries;

  // The most pages one memo holds: a run that asks for more is not one to speed up this way.
  static constexpr std::size_t max_entries = 1024;

  // The key of a run's first page call: its URLs, order and duplicates ignored.
  [[nodiscard]] static std::string key_of(std::vector<std::string> urls);
  [[nodiscard]] static Expected<PageMemo> parse(std::string_view json);
  [[nodiscard]] std::string to_json() const;
  // Adds an entry unless its URL is already there or the memo is full; true when added.
  bool add(Entry e);
  [[nodiscard]] bool contains(std::string_view url) const;
  bool operator==(const PageMemo&) const = default;
};

} // namespace envfix::index
