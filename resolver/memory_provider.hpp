#pragma once
// A CandidateProvider over data held in memory: unit tests and YAML scenarios feed the resolver
// through it without any index.
#include <map>
#include <string>
#include <vector>

#include "resolver/candidate_provider.hpp"

namespace envfix::resolver {

class MemoryProvider final : public CandidateProvider {
public:
  explicit MemoryProvider(std::string description = "the in-memory index") : m_description(std::move(description)) {}

  // Adds a file; `metadata` is its METADATA text. Fills project/url/sha256 defaults when empty.
  void add(index::Candidate file, std::string metadata);
  // Convenience: a wheel "name-version-tags.whl" with Requires-Dist lines and optional Requires-Python.
  void add_wheel(std::string_view filename, const std::vector<std::string>& requires_dist = {},
                 std::string_view requires_python = {});

  [[nodiscard]] Expected<std::vector<index::Candidate>> candidates(const std::string& project) override;
  [[nodiscard]] Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) override;
  [[nodiscard]] std::string describe() const override { return m_description; }

  // How often each was asked for (tests check caching).
  std::size_t candidate_calls = 0, metadata_calls = 0;

private:
  std::string m_description;
  std::map<std::string, std::vector<index::Candidate>> m_files;
  std::map<std::string, std::string> m_metadata; // url -> METADATA
};

} // namespace envfix::resolver
