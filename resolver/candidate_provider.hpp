#pragma once
// Where the resolver gets its facts: the files an index offers for a project and the core metadata of
// one of them. Tests and scenarios feed a MemoryProvider; the CLI uses IndexProvider (index::IndexClient).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "index/candidate.hpp"
#include "specs/metadata.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

class CandidateProvider {
public:
  virtual ~CandidateProvider() = default;
  // Every file offered for `project` (normalized name). An unknown project is an empty list, not an
  // error; errors are for pages that could not be read.
  [[nodiscard]] virtual Expected<std::vector<index::Candidate>> candidates(const std::string& project) = 0;
  [[nodiscard]] virtual Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) = 0;
  // Where candidates come from, for messages ("https://…/simple", "find-links /dir").
  [[nodiscard]] virtual std::string describe() const = 0;

  // Hints: the resolver is about to ask for these; a provider may fetch them concurrently and keep
  // them. Failures are not reported here (the later candidates()/metadata() call reports them).
  virtual void prefetch_candidates(std::span<const std::string> projects) { (void)projects; }
  virtual void prefetch_metadata(std::span<const index::Candidate> files) { (void)files; }
  // A local file (file:// URL) is usable without an index hash: the file is its own source of truth.
  // The resolver asks for the sha256 of such a file only when it ends up in the result.
  [[nodiscard]] virtual Expected<void> complete_hash(index::Candidate& file) {
    (void)file;
    return {};
  }
  // Why `project` has no candidates, when the source said so ("HTTP 404 for https://…/simple/x/"): the
  // resolver's "not found" names it, so a wrong index URL reads as one. "" when there is nothing to say.
  [[nodiscard]] virtual std::string missing_detail(const std::string& project) const {
    (void)project;
    return {};
  }
  // True when the source said it does not have `project` at all (HTTP 404/410, no such directory), as
  // against a page that lists no files: FirstIndexProvider looks in the next index only then. A source
  // held in memory has only the projects added to it.
  [[nodiscard]] virtual bool lacks_project(const std::string& project) const {
    (void)project;
    return true;
  }
  // Look for `project` on every index this provider searches, not only on the first that has it: a
  // package the request names beside a framework whose builds on the first index all pin another
  // framework version (issue 56, item 2). True when that can change its candidates.
  [[nodiscard]] virtual bool widen(const std::string& project) {
    (void)project;
    return false;
  }
  // A version the resolver tries first when it is allowed (the installed one: resolver/installed.hpp).
  [[nodiscard]] virtual std::optional<specs::Version> preferred_version(const std::string& project) {
    (void)project;
    return std::nullopt;
  }
};

} // namespace envfix::resolver
