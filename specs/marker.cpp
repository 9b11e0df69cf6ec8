#include "specs/marker.hpp"

#include <algorithm>
#include <array>
#include <tuple>

#include <fmt/format.h>

#include "specs/name.hpp"
#include "specs/specifier.hpp"
#include "specs/version.hpp"
#include "util/strings.hpp"

namespace envfix::specs {

namespace detail {
struct MarkerNode {
  enum class Kind { compare, all, any };
  Kind kind = Kind::compare;
  std::vector<MarkerNode> children; // all / any
  bool lhs_var = false, rhs_var = false;
  std::string lhs, rhs, op; // op: "==", "in", "not in", ...
};
} // namespace detail

namespace {
using detail::MarkerNode;

constexpr std::array<std::string_view, 11> k_variables = {"implementation_name",
                                                          "implementation_version",
                                                          "os_name",
                                                          "platform_machine",
                                                          "platform_release",
                                                          "platform_system",
                                                          "platform_version",
                                                          "python_full_version",
                                                          "platform_python_implementation",
                                                          "python_version",
                                                          "sys_platform"};

// Values compared with PEP 440 semantics when both sides parse (dependency specifiers spec,
// "Environment Markers").
bool is_version_variable(std::string_view v) {
  return v == "python_version" || v == "python_full_version" || v == "implementation_version" || v == "platform_release";
}

std::optional<std::string> canonical_variable(std::string_view name) {
  if (name == "extra") return std::string(name);
  for (auto v : k_variables)
    if (v == name) return std::string(v);
  // Legacy spellings packaging still accepts.
  if (name == "os.name") return "os_name";
  if (name == "sys.platform") return "sys_platform";
  if (name == "platform.version") return "platform_version";
  if (name == "platform.machine") return "platform_machine";
  if (name == "platform.python_implementation" || name == "python_implementation") return "platform_python_implementation";
  return std::nullopt;
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

constexpr std::size_t k_max_depth = 64;

class MarkerParser {
public:
  explicit MarkerParser(std::string_view s) : m_s(s) {}

  Expected<MarkerNode> parse_all() {
    auto node = ENVFIX_TRY(parse_or(0));
    skip_ws();
    if (m_pos != m_s.size()) return error("expected 'and', 'or' or end of marker");
    return node;
  }

private:
  std::string_view m_s;
  std::size_t m_pos = 0;

  std::unexpected<Error> error(std::string_view what) const {
    std::string found = m_pos < m_s.size() ? fmt::format("'{}'", m_s[m_pos]) : std::string("end");
    return fail(ErrorCode::invalid_input, "invalid marker '{}': {}, found {} at column {}", m_s, what, found, m_pos + 1);
  }

  void skip_ws() {
    while (m_pos < m_s.size() && util::is_space(m_s[m_pos])) ++m_pos;
  }

  // Keyword not followed by an identifier character.
  bool keyword(std::string_view kw) {
    skip_ws();
    if (m_s.substr(m_pos, kw.size()) != kw) return false;
    std::size_t e = m_pos + kw.size();
    if (e < m_s.size() && is_ident_char(m_s[e])) return false;
    m_pos = e;
    return true;
  }

  static void append(MarkerNode& group, MarkerNode child) {
    if (child.kind == group.kind) {
      for (auto& c : child.children) group.children.push_back(std::move(c));
    } else {
      group.children.push_back(std::move(child));
    }
  }

  Expected<MarkerNode> parse_or(std::size_t depth) {
    auto first = ENVFIX_TRY(parse_and(depth));
    if (!keyword("or")) return first;
    MarkerNode group;
    group.kind = MarkerNode::Kind::any;
    append(group, std::move(first));
    do {
      append(group, ENVFIX_TRY(parse_and(depth)));
    } while (keyword("or"));
    return group;
  }

  Expected<MarkerNode> parse_and(std::size_t depth) {
    auto first = ENVFIX_TRY(parse_atom(depth));
    if (!keyword("and")) return first;
    MarkerNode group;
    group.kind = MarkerNode::Kind::all;
    append(group, std::move(first));
    do {
      append(group, ENVFIX_TRY(parse_atom(depth)));
    } while (keyword("and"));
    return group;
  }

  Expected<MarkerNode> parse_atom(std::size_t depth) {
    skip_ws();
    if (m_pos < m_s.size() && m_s[m_pos] == '(') {
      if (depth >= k_max_depth) return error("parentheses nested too deeply");
      ++m_pos;
      auto inner = ENVFIX_TRY(parse_or(depth + 1));
      skip_ws();
      if (m_pos >= m_s.size() || m_s[m_pos] != ')') return error("expected ')'");
      ++m_pos;
      return inner;
    }
    MarkerNode n;
    std::tie(n.lhs, n.lhs_var) = ENVFIX_TRY(parse_value());
    n.op = ENVFIX_TRY(parse_op());
    std::tie(n.rhs, n.rhs_var) = ENVFIX_TRY(parse_value());
    return n;
  }

  // A variable (canonical name, true) or a quoted string (its text, false).
  Expected<std::pair<std::string, bool>> parse_value() {
    skip_ws();
    if (m_pos >= m_s.size()) return error("expected a marker variable or a quoted string");
    char c = m_s[m_pos];
    if (c == '"' || c == '\'') {
      std::size_t close = m_s.find(c, m_pos + 1);
      if (close == std::string_view::npos) return error("unterminated string");
      std::string text(m_s.substr(m_pos + 1, close - m_pos - 1));
      m_pos = close + 1;
      return std::pair{std::move(text), false};
    }
    std::size_t e = m_pos;
    while (e < m_s.size() && is_ident_char(m_s[e])) ++e;
    if (e == m_pos) return error("expected a marker variable or a quoted string");
    auto name = m_s.substr(m_pos, e - m_pos);
    auto canon = canonical_variable(name);
    if (!canon)
      return with_hint(error(fmt::format("unknown marker variable '{}'", name)),
                       util::msg("variables are python_version, python_full_version, os_name, sys_platform, "
                                 "platform_release, platform_system, platform_version, platform_machine, "
                                 "platform_python_implementation, implementation_name, implementation_version, extra"));
    m_pos = e;
    return std::pair{std::move(*canon), true};
  }

  Expected<std::string> parse_op() {
    skip_ws();
    static constexpr std::string_view ops[] = {"===", "==", "!=", "<=", ">=", "~=", "<", ">"};
    for (auto op : ops) {
      if (m_s.substr(m_pos, op.size()) == op) {
        m_pos += op.size();
        return std::string(op);
      }
    }
    if (keyword("in")) return std::string("in");
    std::size_t save = m_pos;
    if (keyword("not")) {
      std::size_t after_not = m_pos;
      if (m_pos < m_s.size() && util::is_space(m_s[m_pos]) && keyword("in")) return std::string("not in");
      m_pos = after_not;
      skip_ws();
      return error("expected 'in' after 'not'");
    }
    m_pos = save;
    return error("expected a comparison operator (== != <= >= < > ~= === in, not in)");
  }
};

std::string quote(const std::string& s) {
  if (s.find('"') != std::string::npos) return "'" + s + "'";
  return "\"" + s + "\"";
}

void render(const MarkerNode& n, std::string& out) {
  switch (n.kind) {
  case MarkerNode::Kind::compare:
    out += n.lhs_var ? n.lhs : quote(n.lhs);
    out += ' ';
    out += n.op;
    out += ' ';
    out += n.rhs_var ? n.rhs : quote(n.rhs);
    return;
  case MarkerNode::Kind::all:
  case MarkerNode::Kind::any: {
    const char* sep = n.kind == MarkerNode::Kind::all ? " and " : " or ";
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      if (i) out += sep;
      const bool paren = n.children[i].kind == MarkerNode::Kind::any; // `and` binds tighter than `or`
      if (paren) out += '(';
      render(n.children[i], out);
      if (paren) out += ')';
    }
    return;
  }
  }
}

std::string lookup(const MarkerEnvironment& env, const std::string& var) {
  auto it = env.values.find(var);
  if (it != env.values.end()) return it->second;
  return is_version_variable(var) ? "0" : "";
}

bool string_op(const std::string& op, const std::string& l, const std::string& r) {
  if (op == "in") return r.find(l) != std::string::npos;
  if (op == "not in") return r.find(l) == std::string::npos;
  if (op == "!=") return l != r;
  if (op == "<" || op == ">") return false; // no ordering on strings (current spec)
  return l == r;                            // == >= <= ~= ===
}

bool eval(const MarkerNode& n, const MarkerEnvironment& env, const std::string& extra) {
  switch (n.kind) {
  case MarkerNode::Kind::all:
    return std::all_of(n.children.begin(), n.children.end(), [&](const MarkerNode& c) { return eval(c, env, extra); });
  case MarkerNode::Kind::any:
    return std::any_of(n.children.begin(), n.children.end(), [&](const MarkerNode& c) { return eval(c, env, extra); });
  case MarkerNode::Kind::compare: break;
  }
  const std::string key = n.lhs_var ? n.lhs : (n.rhs_var ? n.rhs : std::string());
  auto value = [&](bool is_var, const std::string& text) {
    if (!is_var) return key == "extra" ? normalize_name(text) : text;
    if (text == "extra") return extra;
    return lookup(env, text);
  };
  std::string l = value(n.lhs_var, n.lhs);
  std::string r = value(n.rhs_var, n.rhs);
  if (is_version_variable(key) && n.op != "in" && n.op != "not in") {
    auto spec = Specifier::parse(n.op + r);
    auto lv = Version::parse(l);
    if (spec && lv) return spec->contains(*lv, true);
  }
  return string_op(n.op, l, r);
}

} // namespace

Expected<Marker> Marker::parse(std::string_view text) {
  MarkerParser p(text);
  auto root = ENVFIX_TRY(p.parse_all());
  Marker m;
  m.m_root = std::make_shared<const MarkerNode>(std::move(root));
  return m;
}

bool Marker::evaluate(const MarkerEnvironment& env, const std::vector<std::string>& extras) const {
  if (!m_root) return true;
  if (extras.empty()) return eval(*m_root, env, "");
  return std::any_of(extras.begin(), extras.end(), [&](const std::string& e) { return eval(*m_root, env, normalize_name(e)); });
}

std::string Marker::to_string() const {
  std::string out;
  if (m_root) render(*m_root, out);
  return out;
}

} // namespace envfix::specs
