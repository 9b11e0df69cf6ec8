#include "resolver/index_provider.hpp"

#include <algorithm>

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

Expected<std::vector<index::Candidate>> IndexProvider::assemble(const std::string& project,
                                                                Expected<std::vector<index::Candidate>> page) {
  std::vector<index::Candidate> out;
  if (!page) {
    if (page.error().code != ErrorCode::not_found) return std::unexpected(page.error());
    m_missing.emplace(project, page.error());
  } else {
    out = std::move(*page);
  }
  for (const auto& loc : m_find_links) {
    auto files = m_client.find_links_candidates(loc, project);
    if (!files) {
      if (files.error().code != ErrorCode::not_found) return std::unexpected(files.error());
      continue;
    }
    for (auto& c : *files) out.push_back(std::move(c));
  }
  // Local files carry no index hash; they are hashed only if chosen (complete_hash), not here:
  // hashing every wheel of a find-links folder dominated resolve time.
  return m_pages.emplace(project, std::move(out)).first->second; // one copy to the caller, not two
}

bool IndexProvider::lacks_project(const std::string& project) const {
  if (auto it = m_pages.find(project); it != m_pages.end() && !it->second.empty()) return false;
  return m_index_url.empty() || m_missing.contains(project);
}

Expected<std::vector<index::Candidate>> IndexProvider::candidates(const std::string& project) {
  if (auto it = m_pages.find(project); it != m_pages.end()) return it->second;
  if (m_index_url.empty()) return assemble(project, std::vector<index::Candidate>{});
  return assemble(project, m_client.project_candidates(m_index_url, project));
}

void IndexProvider::prefetch_candidates(std::span<const std::string> projects) {
  std::vector<std::string> missing;
  for (const auto& p : projects)
    if (!m_pages.contains(p) && std::find(missing.begin(), missing.end(), p) == missing.end()) missing.push_back(p);
  if (missing.size() < 2 || m_index_url.empty()) return; // nothing to overlap
  auto pages = m_client.project_candidates_many(m_index_url, missing);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    // Errors other than 404 are left for candidates() to report (and retry).
    if (!pages[i] && pages[i].error().code != ErrorCode::not_found) continue;
    (void)assemble(missing[i], std::move(pages[i]));
  }
}

void IndexProvider::prefetch_metadata(std::span<const index::Candidate> files) {
  std::vector<index::Candidate> todo;
  for (const auto& f : files)
    if (!m_metadata.contains(f.url) && !index::file_url_to_path(f.url)) todo.push_back(f);
  if (todo.size() < 2) return;
  auto texts = m_client.fetch_metadata_many(todo);
  for (std::size_t i = 0; i < todo.size(); ++i)
    if (texts[i]) m_metadata.emplace(todo[i].url, std::move(*texts[i]));
}

Expected<void> IndexProvider::complete_hash(index::Candidate& file) {
  if (file.sha256) return {};
  auto path = index::file_url_to_path(file.url);
  if (!path) return {};
  auto h = util::sha256_file_hex(*path);
  if (!h) return std::unexpected(std::move(h).error().context(util::msg("hashing {}", file.filename)));
  file.sha256 = *h;
  return {};
}

Expected<specs::CoreMetadata> IndexProvider::metadata(const index::Candidate& candidate) {
  std::string text;
  if (auto it = m_metadata.find(candidate.url); it != m_metadata.end())
    text = it->second;
  else
    text = ENVFIX_TRY(m_client.fetch_metadata(candidate));
  auto md = specs::CoreMetadata::parse(text);
  if (!md) return std::unexpected(std::move(md).error().context(util::msg("METADATA of {}", candidate.filename)));
  return md;
}

FirstIndexProvider::FirstIndexProvider(std::vector<CandidateProvider*> indexes, Pinned pinned)
    : m_indexes(std::move(indexes)), m_pinned(std::move(pinned)) {}

std::string FirstIndexProvider::describe() const {
  std::string s = m_indexes.front()->describe();
  for (std::size_t i = 1; i < m_indexes.size(); ++i) s += (i == 1 ? ", then extra index " : ", then ") + m_indexes[i]->describe();
  return s;
}

std::optional<std::size_t> FirstIndexProvider::served_by(const std::string& project) const {
  auto it = m_owner.find(project);
  return it == m_owner.end() ? std::nullopt : std::optional<std::size_t>(it->second);
}

CandidateProvider& FirstIndexProvider::owner_of(const std::string& project) {
  auto it = m_owner.find(project);
  return *m_indexes[it == m_owner.end() ? 0 : it->second];
}

bool FirstIndexProvider::widen(const std::string& project) {
  if (searched(project) < 2) return false;
  return m_wide.insert(project).second;
}

Expected<std::vector<index::Candidate>> FirstIndexProvider::candidates(const std::string& project) {
  const std::size_t n = searched(project);
  if (m_wide.contains(project)) {
    // Every index's files; one that cannot answer adds none (the first one's errors read as before).
    std::vector<index::Candidate> all;
    for (std::size_t i = 0; i < n; ++i) {
      auto files = m_indexes[i]->candidates(project);
      if (!files && i == 0) return files;
      if (!files) continue;
      for (auto& f : *files) {
        m_file_owner.emplace(f.url, i);
        all.push_back(std::move(f));
      }
    }
    return all;
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto files = m_indexes[i]->candidates(project);
    if (!files) {
      Error e = std::move(files).error();
      if (i + 1 < n)
        e.add_cause(util::msg("'{}' is not looked up on the indexes after {}: a project an index cannot answer for "
                              "is never taken from the next one (first-index rule)",
                              project, m_indexes[i]->describe()));
      if (i == 0) return std::unexpected(std::move(e)); // the first index's own errors read as before
      return std::unexpected(std::move(e).context(util::msg("extra index {}", m_indexes[i]->describe())));
    }
    if (!files->empty()) {
      m_owner[project] = i;
      return files;
    }
    // Found there with no files (a 200 page without anchors): the project is that index's, so a later
    // index's files for it are never used (a page an outage or portal empties must not hand it on).
    if (i + 1 < n && !m_indexes[i]->lacks_project(project)) {
      m_owner[project] = i;
      m_empty[project] = i;
      return files;
    }
  }
  return std::vector<index::Candidate>{};
}

void FirstIndexProvider::prefetch_candidates(std::span<const std::string> projects) {
  // Index by index, each asked only for the projects every earlier index lacks.
  std::vector<std::string> todo(projects.begin(), projects.end());
  for (std::size_t i = 0; i < m_indexes.size() && !todo.empty(); ++i) {
    m_indexes[i]->prefetch_candidates(todo);
    std::vector<std::string> next;
    for (const auto& p : todo) {
      if (searched(p) <= i + 1) continue;
      auto files = m_indexes[i]->candidates(p); // answered from what was just fetched
      if (files && files->empty() && m_indexes[i]->lacks_project(p)) next.push_back(p);
    }
    todo = std::move(next);
  }
}

void FirstIndexProvider::prefetch_metadata(std::span<const index::Candidate> files) {
  std::map<std::size_t, std::vector<index::Candidate>> by_index;
  for (const auto& f : files) {
    auto it = m_owner.find(f.project);
    by_index[it == m_owner.end() ? 0 : it->second].push_back(f);
  }
  for (auto& [i, fs] : by_index) m_indexes[i]->prefetch_metadata(fs);
}

CandidateProvider& FirstIndexProvider::owner_of(const index::Candidate& file) {
  auto it = m_file_owner.find(file.url);
  return it == m_file_owner.end() ? owner_of(file.project) : *m_indexes[it->second];
}

Expected<specs::CoreMetadata> FirstIndexProvider::metadata(const index::Candidate& candidate) {
  return owner_of(candidate).metadata(candidate);
}

Expected<void> FirstIndexProvider::complete_hash(index::Candidate& file) { return owner_of(file).complete_hash(file); }

std::string FirstIndexProvider::missing_detail(const std::string& project) const {
  if (auto it = m_empty.find(project); it != m_empty.end())
    return fmt::format("'{}' is listed on {} with no usable file; the indexes after it are not searched for a project "
                       "an earlier index has (first-index rule, against dependency confusion)",
                       project, m_indexes[it->second]->describe());
  std::string out;
  for (std::size_t i = 0; i < searched(project); ++i) {
    auto d = m_indexes[i]->missing_detail(project);
    if (!d.empty()) out += (out.empty() ? "" : "; ") + d;
  }
  if (searched(project) == 1 && m_indexes.size() > 1)
    out += (out.empty() ? "" : "; ") +
           fmt::format("{} is the framework's own package: taken only from {}, never from an extra index", project,
                       m_indexes.front()->describe());
  return out;
}

} // namespace envfix::resolver
