#pragma once
// PEP 440 version specifiers (the version specifiers spec, "Version specifiers":
// https://packaging.python.org/en/latest/specifications/version-specifiers/): one clause
// (Specifier) and their AND (SpecifierSet).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specs/version.hpp"
#include "util/error.hpp"

namespace envfix::specs {

enum class SpecOperator { compatible, equal, not_equal, less_equal, greater_equal, less, greater, arbitrary };

std::string_view to_string(SpecOperator op); // "~=", "==", ...

class Specifier {
public:
  // One clause: `>=2.7`, `==2.7.*`, `~=2.2.post3`, `===foobar`, `== 2.7.0+cu128`.
  [[nodiscard]] static Expected<Specifier> parse(std::string_view text);

  SpecOperator op() const { return m_op; }
  bool wildcard() const { return m_wildcard; }
  // The clause's version; for `===` it is set only when the text parses as a version.
  const std::optional<Version>& version() const { return m_version; }
  // The version text as written after the operator (without `.*`); used by `===`.
  const std::string& version_text() const { return m_text; }

  // True when the clause names a pre-release (every operator except `!=` and `==X.*`).
  bool implies_prereleases() const;

  // PEP 440 match. `prereleases` nullopt means: allowed only if this clause implies them.
  bool contains(const Version& v, std::optional<bool> prereleases = std::nullopt) const;

  std::string to_string() const; // canonical version text: `>=2.7`, `==2.7.*`
  friend bool operator==(const Specifier& a, const Specifier& b) { return a.to_string() == b.to_string(); }

private:
  SpecOperator m_op = SpecOperator::equal;
  bool m_wildcard = false;
  std::optional<Version> m_version;
  std::string m_text;
};

class SpecifierSet {
public:
  SpecifierSet() = default; // empty: matches everything (subject to the pre-release rule)

  // Comma-separated clauses; whitespace optional; trailing comma allowed; may be empty.
  [[nodiscard]] static Expected<SpecifierSet> parse(std::string_view text);

  // All clauses match. Pre-releases excluded unless `prereleases` is true, or (nullopt) a clause
  // itself names a pre-release.
  bool contains(const Version& v, std::optional<bool> prereleases = std::nullopt) const;

  // packaging's SpecifierSet.filter: with nullopt and no clause implying pre-releases, returns the
  // matching final releases, or if there are none, the matching pre-releases.
  std::vector<Version> filter(const std::vector<Version>& versions, std::optional<bool> prereleases = std::nullopt) const;

  bool implies_prereleases() const;
  bool empty() const { return m_clauses.empty(); }
  const std::vector<Specifier>& clauses() const { return m_clauses; }
  std::string to_string() const;                           // clauses joined by ",", in parse order
  SpecifierSet intersect(const SpecifierSet& other) const; // AND of both (duplicates dropped)

  friend bool operator==(const SpecifierSet& a, const SpecifierSet& b) { return a.m_clauses == b.m_clauses; }

private:
  std::vector<Specifier> m_clauses;
};

} // namespace envfix::specs
