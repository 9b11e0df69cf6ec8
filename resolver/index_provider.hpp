#pragma once
// CandidateProvider over index::IndexClient: one index URL (http(s), file://, local PEP 503 tree) or a
// list of find-links locations, searched together as one source.
#include <map>
#include <set>
#include <functional>
#include <string>
#include <vector>

#include "index/index_client.hpp"
#include "resolver/candidate_provider.hpp"

namespace envfix::resolver {

class IndexProvider final : public CandidateProvider {
public:
  // `index_url` may be empty when only find-links are used.
  IndexProvider(index::IndexClient& client, std::string index_url, std::vector<std::string> find_links = {});

  [[nodiscard]] Expected<std::vector<index::Candidate>> candidates(const std::string& project) override;
  [[nodiscard]] Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) override;
  [[nodiscard]] std::string describe() const override;
  void prefetch_candidates(std::span<const std::string> projects) override;
  void prefetch_metadata(std::span<const index::Candidate> files) override;
  [[nodiscard]] Expected<void> complete_hash(index::Candidate& file) override;

  // The projects whose index page answered 404 (a missing project is an empty list to the resolver),
  // with the error naming the URL: when every index lacks the main package, that is the answer.
  [[nodiscard]] const std::map<std::string, Error>& missing_pages() const { return m_missing; }
  // Its pages come from the cache only (--offline): a missing page is one never fetched, not a 404.
  [[nodiscard]] bool offline() const { return m_client.offline(); }
  [[nodiscard]] std::string missing_detail(const std::string& project) const override {
    auto it = m_missing.find(project);
    return it == m_missing.end() ? std::string() : it->second.message;
  }
  // The index answered 404/410 for the project (or there is no index, only find-links) and no
  // find-links location has a file of it.
  [[nodiscard]] bool lacks_project(const std::string& project) const override;

private:
  index::IndexClient& m_client;
  std::string m_index_url;
  std::vector<std::string> m_find_links;
  // The index page's result (with find-links files added) → the candidates list.
  [[nodiscard]] Expected<std::vector<index::Candidate>> assemble(const std::string& project,
                                                                 Expected<std::vector<index::Candidate>> page);
  std::map<std::string, std::vector<index::Candidate>> m_pages;
  std::map<std::string, Error> m_missing;
  std::map<std::string, std::string> m_metadata; // url → METADATA text (prefetched)
};

// Several indexes searched as uv's first-index strategy (against dependency confusion): a project
// comes from the first index that has it, all of its files from that one index, never merged across
// indexes; the `pinned` projects (the framework's own packages) only from the first index. Order: the
// first index (the framework's, or --index-url), then each --extra-index-url as given. A page that
// fails (TLS, DNS, HTTP 5xx after the retries, a page that does not parse) is an error naming that
// index and the project, not a reason to look further: an index that is down must not hand its
// projects to the next one. Only "not on this index" (HTTP 404/410: lacks_project) moves on; a page
// that answers 200 with no files is the project found there, with no file to offer (uv's
// first-index rule): the next index is not asked, and missing_detail says why.
class FirstIndexProvider final : public CandidateProvider {
public:
  // `indexes` (not owned, at least one) outlive the provider; `pinned` is asked with normalized names.
  using Pinned = std::function<bool(const std::string& project)>;
  FirstIndexProvider(std::vector<CandidateProvider*> indexes, Pinned pinned);

  [[nodiscard]] Expected<std::vector<index::Candidate>> candidates(const std::string& project) override;
  [[nodiscard]] Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) override;
  [[nodiscard]] std::string describe() const override;
  void prefetch_candidates(std::span<const std::string> projects) override;
  void prefetch_metadata(std::span<const index::Candidate> files) override;
  [[nodiscard]] Expected<void> complete_hash(index::Candidate& file) override;
  [[nodiscard]] std::string missing_detail(const std::string& project) const override;

  // A widened project's files come from every index searched, the first index's first; each file's
  // metadata and hash from the index that listed it.
  [[nodiscard]] bool widen(const std::string& project) override;

  // Which index served a project (0 = the first), once asked.
  [[nodiscard]] std::optional<std::size_t> served_by(const std::string& project) const;

private:
  std::vector<CandidateProvider*> m_indexes;
  Pinned m_pinned;
  std::map<std::string, std::size_t> m_owner;      // project → the index that has it
  std::map<std::string, std::size_t> m_empty;      // project → the index whose page listed no files (it stopped the search)
  std::set<std::string> m_wide;                    // widened projects
  std::map<std::string, std::size_t> m_file_owner; // a widened project's file URL → the index that listed it
  // The indexes a project is looked up in: the first only when pinned.
  [[nodiscard]] std::size_t searched(const std::string& project) const {
    return m_pinned && m_pinned(project) ? 1 : m_indexes.size();
  }
  [[nodiscard]] CandidateProvider& owner_of(const std::string& project);
  [[nodiscard]] CandidateProvider& owner_of(const index::Candidate& file);
};

} // namespace envfix::resolver
