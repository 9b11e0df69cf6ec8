#include "specs/specifier.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "util/strings.hpp"

namespace envfix::specs {
namespace {

using util::lower;
using util::trim;

// packaging's _version_split: [epoch, release..., pre ("a1"), "postN", "devN"] as strings.
std::vector<std::string> version_split(const Version& v, std::size_t* release_len = nullptr) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{}", v.epoch()));
  for (auto r : v.release()) out.push_back(fmt::format("{}", r));
  if (release_len) *release_len = v.release().size();
  if (v.pre()) {
    static constexpr const char* names[] = {"a", "b", "rc"};
    out.push_back(fmt::format("{}{}", names[static_cast<int>(v.pre()->first)], v.pre()->second));
  }
  if (v.post()) out.push_back(fmt::format("post{}", *v.post()));
  if (v.dev()) out.push_back(fmt::format("dev{}", *v.dev()));
  return out;
}

// `==V.*`: C's public part, release zero-padded to V's length, truncated to V's components.
bool prefix_match(const Version& candidate, const Version& spec) {
  std::size_t spec_rel = 0, cand_rel = 0;
  auto s = version_split(spec, &spec_rel);
  auto c = version_split(candidate.public_version(), &cand_rel);
  if (cand_rel < spec_rel) c.insert(c.begin() + 1 + static_cast<std::ptrdiff_t>(cand_rel), spec_rel - cand_rel, "0");
  if (c.size() > s.size()) c.resize(s.size());
  return c == s;
}

bool equal_match(const Version& candidate, const Version& spec) {
  if (!spec.has_local()) return candidate.public_version() == spec;
  return candidate == spec;
}

} // namespace

std::string_view to_string(SpecOperator op) {
  switch (op) {
  case SpecOperator::compatible: return "~=";
  case SpecOperator::equal: return "==";
  case SpecOperator::not_equal: return "!=";
  case SpecOperator::less_equal: return "<=";
  case SpecOperator::greater_equal: return ">=";
  case SpecOperator::less: return "<";
  case SpecOperator::greater: return ">";
  case SpecOperator::arbitrary: return "===";
  }
  return "?";
}

Expected<Specifier> Specifier::parse(std::string_view text) {
  std::string_view s = trim(text);
  static constexpr std::pair<std::string_view, SpecOperator> ops[] = {
      {"===", SpecOperator::arbitrary}, {"~=", SpecOperator::compatible}, {"==", SpecOperator::equal},
      {"!=", SpecOperator::not_equal},  {"<=", SpecOperator::less_equal}, {">=", SpecOperator::greater_equal},
      {"<", SpecOperator::less},        {">", SpecOperator::greater}};
  Specifier spec;
  bool found = false;
  for (auto [tok, op] : ops) {
    if (s.starts_with(tok)) {
      spec.m_op = op;
      s.remove_prefix(tok.size());
      found = true;
      break;
    }
  }
  const std::size_t lead = static_cast<std::size_t>(trim(text).data() - text.data());
  if (!found)
    return fail(ErrorCode::invalid_input, "invalid specifier '{}': expected an operator (~= == != <= >= < > ===) at column {}",
                text, lead + 1);
  std::string_view v = trim(s);
  const std::size_t vcol = static_cast<std::size_t>(v.data() - text.data()) + 1;
  if (v.empty())
    return fail(ErrorCode::invalid_input, "invalid specifier '{}': missing version after '{}' at column {}", text,
                envfix::specs::to_string(spec.m_op), vcol);
  if (spec.m_op == SpecOperator::arbitrary) {
    for (std::size_t i = 0; i < v.size(); ++i)
      if (util::is_space(v[i]) || v[i] == ',' || v[i] == ';')
        return fail(ErrorCode::invalid_input, "invalid specifier '{}': unexpected '{}' at column {}", text, v[i], vcol + i);
    spec.m_text = std::string(v);
    if (auto pv = Version::parse(v)) spec.m_version = *pv;
    return spec;
  }
  std::string_view vt = v;
  if (vt.ends_with(".*")) {
    if (spec.m_op != SpecOperator::equal && spec.m_op != SpecOperator::not_equal)
      return fail(ErrorCode::invalid_input, "invalid specifier '{}': '.*' is allowed only with == and != (column {})", text,
                  vcol + vt.size() - 2);
    spec.m_wildcard = true;
    vt.remove_suffix(2);
  }
  auto pv = Version::parse(vt);
  if (!pv) return std::unexpected(std::move(pv.error()).context(util::msg("invalid specifier '{}'", text)));
  if (pv->has_local() && spec.m_op != SpecOperator::equal && spec.m_op != SpecOperator::not_equal)
    return with_hint(fail(ErrorCode::invalid_input, "invalid specifier '{}': a local version label is not allowed with '{}'",
                          text, envfix::specs::to_string(spec.m_op)),
                     util::msg("only ==, != and === may name a local version such as +cu128"));
  if (spec.m_wildcard && (pv->has_local() || pv->is_devrelease()))
    return fail(ErrorCode::invalid_input,
                "invalid specifier '{}': a prefix match ('.*') cannot name a dev release or a local label", text);
  if (spec.m_op == SpecOperator::compatible && pv->release().size() < 2)
    return with_hint(fail(ErrorCode::invalid_input, "invalid specifier '{}': '~=' needs at least two release components", text),
                     util::msg("write e.g. ~=2.7 or >=2"));
  spec.m_text = std::string(vt);
  spec.m_version = std::move(*pv);
  return spec;
}

bool Specifier::implies_prereleases() const {
  if (m_op == SpecOperator::not_equal) return false;
  if (m_op == SpecOperator::equal && m_wildcard) return false;
  return m_version && m_version->is_prerelease();
}

bool Specifier::contains(const Version& c, std::optional<bool> prereleases) const {
  if (!prereleases.value_or(implies_prereleases()) && c.is_prerelease()) return false;
  if (m_op == SpecOperator::arbitrary) return lower(c.to_string()) == lower(m_text);
  const Version& v = *m_version;
  switch (m_op) {
  case SpecOperator::equal: return m_wildcard ? prefix_match(c, v) : equal_match(c, v);
  case SpecOperator::not_equal: return !(m_wildcard ? prefix_match(c, v) : equal_match(c, v));
  case SpecOperator::less_equal: return c.public_version() <= v;
  case SpecOperator::greater_equal: return c.public_version() >= v;
  case SpecOperator::less:
    if (!(c < v)) return false;
    // `<2.8` must not admit 2.8.0rc1 or 2.8.0.dev1.
    if (!v.is_prerelease() && c.is_prerelease() && c.base_version() == v.base_version()) return false;
    return true;
  case SpecOperator::greater:
    if (!(c > v)) return false;
    // `>2.8.0` must not admit 2.8.0.post1 or 2.8.0+cu128.
    if (!v.is_postrelease() && c.is_postrelease() && c.base_version() == v.base_version()) return false;
    if (c.has_local() && c.base_version() == v.base_version()) return false;
    return true;
  case SpecOperator::compatible: {
    if (!(c.public_version() >= v)) return false;
    Version prefix = Version::parse(fmt::format("{}!{}", v.epoch(),
                                                [&] {
                                                  std::string r;
                                                  for (std::size_t i = 0; i + 1 < v.release().size(); ++i)
                                                    r += (i ? "." : "") + fmt::format("{}", v.release()[i]);
                                                  return r;
                                                }()))
                         .value();
    return prefix_match(c, prefix);
  }
  case SpecOperator::arbitrary: break;
  }
  return false;
}

std::string Specifier::to_string() const {
  if (m_op == SpecOperator::arbitrary) return "===" + m_text;
  std::string out(envfix::specs::to_string(m_op));
  out += m_version->to_string();
  if (m_wildcard) out += ".*";
  return out;
}

Expected<SpecifierSet> SpecifierSet::parse(std::string_view text) {
  SpecifierSet set;
  if (trim(text).empty()) return set;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const bool last = comma == std::string_view::npos;
    std::string_view part = text.substr(start, (last ? text.size() : comma) - start);
    if (trim(part).empty()) {
      if (!(last && !set.m_clauses.empty())) // only a trailing comma may leave an empty clause
        return fail(ErrorCode::invalid_input, "invalid specifier set '{}': empty clause at column {}", text, start + 1);
    } else {
      auto spec = Specifier::parse(part);
      if (!spec) {
        if (text.find(',') == std::string_view::npos) return std::unexpected(std::move(spec.error()));
        return std::unexpected(
            std::move(spec.error()).context(util::msg("invalid specifier set '{}' (clause at column {})", text, start + 1)));
      }
      set.m_clauses.push_back(std::move(*spec));
    }
    if (last) break;
    start = comma + 1;
  }
  return set;
}

bool SpecifierSet::implies_prereleases() const {
  return std::any_of(m_clauses.begin(), m_clauses.end(), [](const Specifier& s) { return s.implies_prereleases(); });
}

bool SpecifierSet::contains(const Version& v, std::optional<bool> prereleases) const {
  const bool allow = prereleases.value_or(implies_prereleases());
  if (!allow && v.is_prerelease()) return false;
  return std::all_of(m_clauses.begin(), m_clauses.end(), [&](const Specifier& s) { return s.contains(v, allow); });
}

std::vector<Version> SpecifierSet::filter(const std::vector<Version>& versions, std::optional<bool> prereleases) const {
  std::vector<Version> out;
  if (prereleases || implies_prereleases()) {
    const bool allow = prereleases.value_or(true);
    for (const auto& v : versions)
      if (contains(v, allow)) out.push_back(v);
    return out;
  }
  std::vector<Version> pre;
  for (const auto& v : versions) {
    if (!contains(v, true)) continue;
    (v.is_prerelease() ? pre : out).push_back(v);
  }
  return out.empty() ? pre : out;
}

std::string SpecifierSet::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < m_clauses.size(); ++i) {
    if (i) out += ',';
    out += m_clauses[i].to_string();
  }
  return out;
}

SpecifierSet SpecifierSet::intersect(const SpecifierSet& other) const {
  SpecifierSet out = *this;
  for (const auto& c : other.m_clauses)
    if (std::find(out.m_clauses.begin(), out.m_clauses.end(), c) == out.m_clauses.end()) out.m_clauses.push_back(c);
  return out;
}

} // namespace envfix::specs
