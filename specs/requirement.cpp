#include "specs/requirement.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "specs/name.hpp"
#include "util/strings.hpp"

namespace envfix::specs {
namespace {

bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool is_name_char(char c) { return is_ascii_alnum(c) || c == '-' || c == '_' || c == '.'; }

class RequirementParser {
public:
  explicit RequirementParser(std::string_view s) : m_s(s) {}

  Expected<Requirement> run() {
    Requirement r;
    skip_ws();
    r.name = ENVFIX_TRY(identifier("a project name"));
    skip_ws();
    if (peek() == '[') {
      ++m_pos;
      skip_ws();
      if (peek() != ']') {
        while (true) {
          r.extras.push_back(ENVFIX_TRY(identifier("an extra name")));
          skip_ws();
          if (peek() == ',') {
            ++m_pos;
            skip_ws();
            continue;
          }
          if (peek() == ']') break;
          return error("expected ',' or ']' in extras");
        }
      }
      ++m_pos; // ']'
      std::sort(r.extras.begin(), r.extras.end());
      r.extras.erase(std::unique(r.extras.begin(), r.extras.end()), r.extras.end());
      skip_ws();
    }
    if (peek() == '@') {
      ++m_pos;
      skip_ws();
      std::size_t b = m_pos;
      while (m_pos < m_s.size() && !util::is_space(m_s[m_pos])) ++m_pos;
      if (m_pos == b) return error("expected a URL after '@'");
      r.url = std::string(m_s.substr(b, m_pos - b));
      skip_ws();
      if (m_pos == m_s.size()) return r;
      if (peek() != ';') return error("expected ';' or end after the URL");
      ++m_pos;
      r.marker = ENVFIX_TRY(marker());
      return r;
    }
    std::size_t semi = m_s.find(';', m_pos);
    std::size_t end = semi == std::string_view::npos ? m_s.size() : semi;
    std::string_view spec_text = m_s.substr(m_pos, end - m_pos);
    while (!spec_text.empty() && util::is_space(spec_text.back())) spec_text.remove_suffix(1);
    if (!spec_text.empty()) {
      const char c = spec_text.front();
      std::size_t spec_col = m_pos + 1;
      if (c == '(') {
        if (spec_text.back() != ')') {
          m_pos += spec_text.size();
          return error("expected ')' to close the version specifier");
        }
        spec_text = spec_text.substr(1, spec_text.size() - 2);
      } else if (c != '<' && c != '>' && c != '=' && c != '!' && c != '~') {
        return error("expected a version specifier, '@', ';' or end");
      }
      auto set = SpecifierSet::parse(spec_text);
      if (!set)
        return std::unexpected(
            std::move(set.error())
                .context(util::msg("invalid requirement '{}': bad version specifier at column {}", m_s, spec_col)));
      r.specifier = std::move(*set);
    }
    m_pos = end;
    if (semi != std::string_view::npos) {
      ++m_pos;
      r.marker = ENVFIX_TRY(marker());
    }
    return r;
  }

private:
  std::string_view m_s;
  std::size_t m_pos = 0;

  char peek() const { return m_pos < m_s.size() ? m_s[m_pos] : '\0'; }
  void skip_ws() {
    while (m_pos < m_s.size() && util::is_space(m_s[m_pos])) ++m_pos;
  }

  std::unexpected<Error> error(std::string_view what) const {
    std::string found = m_pos < m_s.size() ? fmt::format("'{}'", m_s[m_pos]) : std::string("end");
    return fail(ErrorCode::invalid_input, "invalid requirement '{}': {}, found {} at column {}", m_s, what, found, m_pos + 1);
  }

  Expected<std::string> identifier(std::string_view what) {
    std::size_t b = m_pos;
    if (!is_ascii_alnum(peek())) return error(fmt::format("expected {}", what));
    while (m_pos < m_s.size() && is_name_char(m_s[m_pos])) ++m_pos;
    while (m_pos > b + 1 && !is_ascii_alnum(m_s[m_pos - 1])) --m_pos; // must end alphanumeric
    return std::string(m_s.substr(b, m_pos - b));
  }

  Expected<Marker> marker() {
    const std::size_t col = m_pos + 1;
    auto m = Marker::parse(m_s.substr(m_pos));
    if (!m)
      return std::unexpected(
          std::move(m.error()).context(util::msg("invalid requirement '{}': bad marker at column {}", m_s, col)));
    m_pos = m_s.size();
    return m;
  }
};

} // namespace

Expected<Requirement> Requirement::parse(std::string_view text) {
  RequirementParser p(text);
  return p.run();
}

std::string Requirement::to_string() const {
  std::string out = name;
  if (!extras.empty()) {
    out += '[';
    for (std::size_t i = 0; i < extras.size(); ++i) {
      if (i) out += ',';
      out += extras[i];
    }
    out += ']';
  }
  if (!url.empty()) {
    out += " @ " + url;
    if (marker) out += " ; " + marker->to_string(); // a space must separate the URL from ';'
    return out;
  }
  out += specifier.to_string();
  if (marker) out += "; " + marker->to_string();
  return out;
}

std::string Requirement::normalized_name() const { return normalize_name(name); }

bool Requirement::applies(const MarkerEnvironment& env, const std::vector<std::string>& extras_in) const {
  return !marker || marker->evaluate(env, extras_in);
}

} // namespace envfix::specs
