#include "resolver/user_limits.hpp"

#include "resolver/installed.hpp"

namespace envfix::resolver {

Expected<std::vector<specs::Requirement>> applicable_constraints(const std::vector<std::string>& texts,
                                                                 const specs::MarkerEnvironment& env) {
  std::vector<specs::Requirement> out;
  for (const auto& t : texts) {
    auto r = ENVFIX_TRY(specs::Requirement::parse(t));
    // pip refuses both in a constraints file: a constraint limits versions, it asks for nothing.
    if (!r.extras.empty() || !r.url.empty())
      return make_error(ErrorCode::invalid_input,
                        r.url.empty() ? util::msg("constraint {} names extras", t) : util::msg("constraint {} names a URL", t),
                        util::msg("a constraint is a name and a version range: NAME<2 or NAME==1.4"));
    if (r.applies(env)) out.push_back(std::move(r));
  }
  return out;
}

CandidateFilter limits_filter(const UserLimits& limits) {
  if (limits.empty()) return {};
  return [limits](const index::Candidate& c, const specs::WheelFilename& wf) -> std::optional<Veto> {
    for (const auto& k : limits.constraints)
      if (k.normalized_name() == c.project && !k.specifier.contains(wf.version, true))
        return Veto{RejectReason::constraint, util::msg("the constraint {} excludes it", k.to_string())};
    if (!limits.hash_mode || is_installed_candidate(c)) return std::nullopt;
    const auto allowed = limits.hashes.find(c.project);
    if (allowed == limits.hashes.end() || (c.sha256 && allowed->second.contains(*c.sha256))) return std::nullopt;
    return Veto{RejectReason::hash_not_listed,
                c.sha256 ? util::msg("sha256 {} is not among the hashes the requirements list", *c.sha256)
                         : util::msg("the index gives no sha256 to hold against the requirements' hashes")};
  };
}

CandidateFilter both(CandidateFilter first, CandidateFilter second) {
  if (!first) return second;
  if (!second) return first;
  return [first = std::move(first), second = std::move(second)](const index::Candidate& c,
                                                                const specs::WheelFilename& wf) -> std::optional<Veto> {
    if (auto v = first(c, wf)) return v;
    return second(c, wf);
  };
}

std::optional<UnhashedPin> unhashed_pin(const UserLimits& limits, const std::vector<Pin>& pins) {
  if (!limits.hash_mode) return std::nullopt;
  for (const auto& p : pins)
    if (!is_installed_candidate(p.file) && !limits.hashes.contains(p.name)) return UnhashedPin{p.name, p.version.to_string()};
  return std::nullopt;
}

} // namespace envfix::resolver
