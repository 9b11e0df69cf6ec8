#include "resolver/index_provider.hpp"

#include <fmt/format.h>

#include "index/url.hpp"
#include "util/sha256.hpp"

namespace envfix::resolver {

IndexProvider::IndexProvider(index::IndexClient& client, std::string index_url, std::vector<std::string> find_links)
    : m_client(client), m_index_url(std::move(index_url)), m_find_links(std::move(find_links)) {}

std::string IndexProvider::describe() const {
  std::string s = m_index_url.empty() ? "" : index::redact_url(m_index_url);
  for (const auto& f : m_find_links) s += (s.empty() ? "" : " + ") + std::string("find-links ") + f;
  return s.empty() ? "no index" : s;
}

Expected<std::vector<index::Candidate>> IndexProvider::candidates(const std::string& project) {
  if (auto it = m_pages.find(project); it != m_pages.end()) return it->second;
  std::vector<index::Candidate> out;
  if (!m_index_url.empty()) {
    auto page = m_client.project_candidates(m_index_url, project);
    if (!page) {
      if (page.error().code != ErrorCode::not_found) return std::unexpected(page.error());
    } else {
      out = std::move(*page);
    }
  }
  for (const auto& loc : m_find_links) {
    auto files = m_client.find_links_candidates(loc, project);
    if (!files) {
      if (files.error().code != ErrorCode::not_found) return std::unexpected(files.error());
      continue;
    }
    for (auto& c : *files) out.push_back(std::move(c));
  }
  // Local files carry no index hash: the file itself is the source of truth, so hash it here.
  for (auto& c : out) {
    if (c.sha256) continue;
    if (auto path = index::file_url_to_path(c.url)) {
      auto h = util::sha256_file_hex(*path);
      if (h) c.sha256 = *h;
    }
  }
  m_pages.emplace(project, out);
  return out;
}

Expected<specs::CoreMetadata> IndexProvider::metadata(const index::Candidate& candidate) {
  auto text = ENVFIX_TRY(m_client.fetch_metadata(candidate));
  auto md = specs::CoreMetadata::parse(text);
  if (!md) return std::unexpected(std::move(md).error().context(fmt::format("METADATA of {}", candidate.filename)));
  return md;
}

} // namespace envfix::resolver
