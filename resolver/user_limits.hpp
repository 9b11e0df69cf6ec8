#pragma once
// What the user's files limit beyond the request (issue 36; README.md, the pip/uv table): constraints
// (-c: a version range for a project, if it is needed at all) and, in hash-checking mode, the files
// whose sha256 the requirements list. Both veto files as the resolver classifies them, for the plain resolver
// and the framework selector alike, and each file they veto is a rejection with its reason.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "resolver/rejection.hpp"
#include "resolver/resolver.hpp"
#include "specs/marker.hpp"
#include "specs/requirement.hpp"

namespace envfix::resolver {

struct UserLimits {
  std::vector<specs::Requirement> constraints;         // their markers already held against the target
  std::map<std::string, std::set<std::string>> hashes; // normalized name → the sha256 digests allowed
  bool hash_mode = false;
  [[nodiscard]] bool empty() const { return constraints.empty() && !hash_mode; }
};

// The constraints whose markers hold for `env`; invalid_input for a constraint pip would not take
// (extras, a URL), naming it.
[[nodiscard]] Expected<std::vector<specs::Requirement>> applicable_constraints(const std::vector<std::string>& texts,
                                                                               const specs::MarkerEnvironment& env);

// The veto of a file the limits exclude (reason constraint or hash_not_listed), for ResolveOptions and
// FrameworkRequest; empty when there are no limits. An installed distribution offered as a candidate
// (resolver/installed.hpp) is held to the constraints only: pip keeps what is installed in
// hash-checking mode too.
[[nodiscard]] CandidateFilter limits_filter(const UserLimits& limits);

// Both filters, `first`'s veto first; either may be empty.
[[nodiscard]] CandidateFilter both(CandidateFilter first, CandidateFilter second);

// In hash-checking mode, the first planned file that no requirement lists hashes for: pip's rule that
// every dependency is in the file with its hashes. nullopt when all are (or the mode is off).
struct UnhashedPin {
  std::string name;
  std::string version;
};
[[nodiscard]] std::optional<UnhashedPin> unhashed_pin(const UserLimits& limits, const std::vector<Pin>& pins);

} // namespace envfix::resolver
