#pragma once
// A wheel file the user names (the guide's fix B: the build downloaded by hand): `./torch-….whl`, an
// absolute path, or `torch @ file:///…/torch-….whl`. It is the user's chosen build (issue 56, item 8):
// a requirement pinned to the file's version, and the only candidate of its project, so the
// resolver never replaces it with an index's build; its kernels are read by apply's gate like an
// index file's.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "index/candidate.hpp"
#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/candidate_provider.hpp"
#include "resolver/evidence.hpp"
#include "resolver/plan.hpp"
#include "specs/requirement.hpp"
#include "util/error.hpp"

namespace envfix::resolver {

struct DirectFile {
  specs::Requirement requirement; // name==version (with its local label), the request's extras and marker
  index::Candidate file;          // file:// URL, its size; sha256 computed when it is resolved
};

// A request as given on the command line: requirements, with each wheel file (a path, or
// name @ file://) as the pin of its own build and its DirectFile beside. Errors name the argument.
struct ParsedRequest {
  std::vector<specs::Requirement> requirements;
  std::vector<DirectFile> direct;
};
[[nodiscard]] Expected<ParsedRequest> parse_request(const std::vector<std::string>& args);

// Is `arg` a request for a wheel file: a path ending in .whl (absolute, or starting with ./ or ../, or
// naming an existing file)? nullopt when it is not; an error when it is but cannot be used (no such
// file, a name that is not a wheel's).
[[nodiscard]] Expected<std::optional<DirectFile>> direct_file(std::string_view arg);
// The same for a parsed `name @ url`: a file:// wheel whose project is `name`. nullopt for a
// requirement without a URL; an error for a URL envfix cannot take (not file://, not a wheel, another
// project's file).
[[nodiscard]] Expected<std::optional<DirectFile>> direct_file(const specs::Requirement& r);

// The variant a direct file of the framework's main package is a build of, by its local label
// (torch-2.7.0+cu128 → "cu128"), so that its companions come from that variant's index; "" when the
// request names none or the label is no variant of the matrices.
[[nodiscard]] std::string direct_variant(const matrices::Framework& fw, const std::vector<DirectFile>& files);

// Each direct file's project offers that file alone; every other project is `inner`'s. Metadata and
// the hash of a direct file are `reader`'s (a provider that reads local wheels: IndexProvider).
class DirectFileProvider final : public CandidateProvider {
public:
  DirectFileProvider(CandidateProvider& inner, CandidateProvider& reader, const std::vector<DirectFile>& files);
  [[nodiscard]] Expected<std::vector<index::Candidate>> candidates(const std::string& project) override;
  [[nodiscard]] Expected<specs::CoreMetadata> metadata(const index::Candidate& candidate) override;
  [[nodiscard]] std::string describe() const override { return m_inner.describe(); }
  void prefetch_candidates(std::span<const std::string> projects) override { m_inner.prefetch_candidates(projects); }
  void prefetch_metadata(std::span<const index::Candidate> files) override { m_inner.prefetch_metadata(files); }
  [[nodiscard]] Expected<void> complete_hash(index::Candidate& file) override;
  [[nodiscard]] std::string missing_detail(const std::string& project) const override { return m_inner.missing_detail(project); }
  [[nodiscard]] bool lacks_project(const std::string& project) const override {
    return !m_files.contains(project) && m_inner.lacks_project(project);
  }
  [[nodiscard]] bool widen(const std::string& project) override { return !m_files.contains(project) && m_inner.widen(project); }
  [[nodiscard]] std::optional<specs::Version> preferred_version(const std::string& project) override {
    return m_files.contains(project) ? std::nullopt : m_inner.preferred_version(project);
  }

private:
  [[nodiscard]] bool is_direct(const index::Candidate& c) const;
  CandidateProvider& m_inner;
  CandidateProvider& m_reader;
  std::map<std::string, index::Candidate> m_files; // by normalized project
};

// A plan whose main package is a direct file says so: chosen as named, not from the index (whose
// URL the plan's `index` otherwise names); its kernels are read by apply's gate before anything changes.
void name_direct_choice(Plan& plan, std::string_view main_package, const std::vector<DirectFile>& files);

// The direct files among the pins that replace what is installed: the same name at the same version
// but another build (wheel::same_build of the installed RECORD and the file's, read by `wheel_record`);
// a file that is the installed build stays "nothing to do".
[[nodiscard]] std::set<std::string> direct_replacements(const std::vector<DirectFile>& files,
                                                        const std::vector<probe::InstalledDist>& installed,
                                                        const RecordReader& wheel_record);

} // namespace envfix::resolver
