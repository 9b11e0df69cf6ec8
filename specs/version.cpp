#include "specs/version.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace envfix::specs {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z'); }
bool is_sep(char c) { return c == '-' || c == '_' || c == '.'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Matches the permissive PEP 440 pattern (the version specifiers spec, "Appendix: Parsing version
// strings with regular expressions") with backtracking over its optional separators,
// so that it accepts exactly what packaging's regex accepts. `m_furthest` records how far the
// meaningful tokens (digits, keywords) reached, which is where an error is reported.
class VersionMatcher {
public:
  explicit VersionMatcher(std::string_view s) : m_s(s) {}

  std::string_view m_s;
  std::size_t m_furthest = 0;
  bool m_overflow = false;
  std::size_t m_overflow_pos = 0;

  std::uint64_t m_epoch = 0;
  std::vector<std::uint64_t> m_release;
  std::optional<std::pair<PreKind, std::uint64_t>> m_pre;
  std::optional<std::uint64_t> m_post;
  std::optional<std::uint64_t> m_dev;
  std::vector<std::string> m_local;

  void reach(std::size_t pos) { m_furthest = std::max(m_furthest, pos); }

  // Digit run at pos → (value, end); nullopt when no digit.
  std::optional<std::pair<std::uint64_t, std::size_t>> number(std::size_t pos) {
    std::size_t e = pos;
    std::uint64_t v = 0;
    bool over = false;
    while (e < m_s.size() && is_digit(m_s[e])) {
      auto d = static_cast<std::uint64_t>(m_s[e] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
        over = true;
      else
        v = v * 10 + d;
      ++e;
    }
    if (e == pos) return std::nullopt;
    if (over && !m_overflow) {
      m_overflow = true;
      m_overflow_pos = pos;
    }
    reach(e);
    return std::pair{v, e};
  }

  bool starts(std::size_t pos, std::string_view kw) const { return m_s.substr(pos, kw.size()) == kw; }

  // `[-_.]? N?` after a keyword: calls k(value, end) for each way to read it, most consuming first.
  template <class K>
  bool optional_number(std::size_t pos, K&& k) {
    if (pos < m_s.size() && is_sep(m_s[pos])) {
      if (auto n = number(pos + 1)) {
        if (k(n->first, n->second)) return true;
      }
      if (k(0, pos + 1)) return true; // separator with no number
    }
    if (auto n = number(pos)) {
      if (k(n->first, n->second)) return true;
    }
    return k(0, pos);
  }

  bool stage_pre(std::size_t pos) {
    static constexpr std::pair<std::string_view, PreKind> kws[] = {
        {"preview", PreKind::rc}, {"alpha", PreKind::a}, {"beta", PreKind::b}, {"pre", PreKind::rc},
        {"rc", PreKind::rc},      {"a", PreKind::a},     {"b", PreKind::b},    {"c", PreKind::rc}};
    for (std::size_t start : {pos, pos + 1}) {
      if (start == pos + 1 && !(pos < m_s.size() && is_sep(m_s[pos]))) break;
      for (auto [kw, kind] : kws) {
        if (!starts(start, kw)) continue;
        reach(start + kw.size());
        const PreKind kd = kind;
        if (optional_number(start + kw.size(), [&](std::uint64_t n, std::size_t end) {
              m_pre = std::pair{kd, n};
              return stage_post(end);
            }))
          return true;
        m_pre.reset();
      }
    }
    return stage_post(pos);
  }

  bool stage_post(std::size_t pos) {
    // -N
    if (pos < m_s.size() && m_s[pos] == '-') {
      if (auto n = number(pos + 1)) {
        m_post = n->first;
        if (stage_dev(n->second)) return true;
        m_post.reset();
      }
    }
    static constexpr std::string_view kws[] = {"post", "rev", "r"};
    for (std::size_t start : {pos, pos + 1}) {
      if (start == pos + 1 && !(pos < m_s.size() && is_sep(m_s[pos]))) break;
      for (auto kw : kws) {
        if (!starts(start, kw)) continue;
        reach(start + kw.size());
        if (optional_number(start + kw.size(), [&](std::uint64_t n, std::size_t end) {
              m_post = n;
              return stage_dev(end);
            }))
          return true;
        m_post.reset();
      }
    }
    return stage_dev(pos);
  }

  bool stage_dev(std::size_t pos) {
    for (std::size_t start : {pos, pos + 1}) {
      if (start == pos + 1 && !(pos < m_s.size() && is_sep(m_s[pos]))) break;
      if (!starts(start, "dev")) continue;
      reach(start + 3);
      if (optional_number(start + 3, [&](std::uint64_t n, std::size_t end) {
            m_dev = n;
            return stage_local(end);
          }))
        return true;
      m_dev.reset();
    }
    return stage_local(pos);
  }

  bool stage_local(std::size_t pos) {
    if (pos == m_s.size()) return true;
    if (m_s[pos] != '+') return false;
    std::vector<std::string> segs;
    std::size_t p = pos + 1;
    while (true) {
      std::size_t e = p;
      while (e < m_s.size() && is_lower_alnum(m_s[e])) ++e;
      if (e == p) return false;
      reach(e);
      std::string seg(m_s.substr(p, e - p));
      if (std::all_of(seg.begin(), seg.end(), is_digit)) {
        auto nz = seg.find_first_not_of('0');
        seg = nz == std::string::npos ? "0" : seg.substr(nz);
      }
      segs.push_back(std::move(seg));
      if (e == m_s.size()) break;
      if (!is_sep(m_s[e])) return false;
      p = e + 1;
    }
    m_local = std::move(segs);
    return true;
  }

  bool run() {
    std::size_t pos = 0;
    if (pos < m_s.size() && m_s[pos] == 'v') ++pos;
    auto first = number(pos);
    if (!first) return false;
    pos = first->second;
    if (pos < m_s.size() && m_s[pos] == '!') {
      m_epoch = first->first;
      reach(pos + 1);
      first = number(pos + 1);
      if (!first) return false;
      pos = first->second;
    }
    m_release.push_back(first->first);
    while (pos + 1 < m_s.size() && m_s[pos] == '.' && is_digit(m_s[pos + 1])) {
      auto n = number(pos + 1);
      m_release.push_back(n->first);
      pos = n->second;
    }
    return stage_pre(pos);
  }
};

std::string printable(char c) {
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  return std::string(1, c);
}

} // namespace

Expected<Version> Version::parse(std::string_view text) {
  std::size_t b = 0, e = text.size();
  while (b < e && is_space(text[b])) ++b;
  while (e > b && is_space(text[e - 1])) --e;
  std::string lower(text.substr(b, e - b));
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (lower.empty()) return fail(ErrorCode::invalid_input, "invalid version '{}': empty", text);

  VersionMatcher m(lower);
  if (!m.run()) {
    std::size_t at = m.m_furthest;
    if (at >= lower.size())
      return fail(ErrorCode::invalid_input, "invalid version '{}': unexpected end at column {}", text, b + at + 1);
    return fail(ErrorCode::invalid_input, "invalid version '{}': unexpected '{}' at column {}", text, printable(lower[at]),
                b + at + 1);
  }
  if (m.m_overflow)
    return fail(ErrorCode::invalid_input, "invalid version '{}': number too large at column {}", text, b + m.m_overflow_pos + 1);
  Version v;
  v.m_epoch = m.m_epoch;
  v.m_release = std::move(m.m_release);
  v.m_pre = m.m_pre;
  v.m_post = m.m_post;
  v.m_dev = m.m_dev;
  v.m_local = std::move(m.m_local);
  return v;
}

std::string Version::local() const {
  std::string out;
  for (std::size_t i = 0; i < m_local.size(); ++i) {
    if (i) out += '.';
    out += m_local[i];
  }
  return out;
}

std::string Version::to_string() const {
  std::string out;
  if (m_epoch != 0) out += fmt::format("{}!", m_epoch);
  for (std::size_t i = 0; i < m_release.size(); ++i) {
    if (i) out += '.';
    out += fmt::format("{}", m_release[i]);
  }
  if (m_pre) {
    static constexpr const char* names[] = {"a", "b", "rc"};
    out += fmt::format("{}{}", names[static_cast<int>(m_pre->first)], m_pre->second);
  }
  if (m_post) out += fmt::format(".post{}", *m_post);
  if (m_dev) out += fmt::format(".dev{}", *m_dev);
  if (!m_local.empty()) out += "+" + local();
  return out;
}

Version Version::public_version() const {
  Version v = *this;
  v.m_local.clear();
  return v;
}

Version Version::base_version() const {
  Version v;
  v.m_epoch = m_epoch;
  v.m_release = m_release;
  return v;
}

namespace {

// -1 = −∞, 1 = +∞, 0 = a real value to compare next.
template <class T>
std::strong_ordering cmp_opt_key(int inf_a, const T& a, int inf_b, const T& b) {
  if (inf_a != inf_b) return inf_a <=> inf_b;
  if (inf_a != 0) return std::strong_ordering::equal;
  return a <=> b;
}

bool all_digits(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }

std::strong_ordering cmp_local_seg(const std::string& a, const std::string& b) {
  const bool na = all_digits(a), nb = all_digits(b);
  if (na && nb) {
    // Normalized (no leading zeros): longer is larger.
    if (auto c = a.size() <=> b.size(); c != 0) return c;
    return a.compare(b) <=> 0;
  }
  if (na != nb) return na ? std::strong_ordering::greater : std::strong_ordering::less; // ints > strings
  return a.compare(b) <=> 0;
}

} // namespace

std::strong_ordering operator<=>(const Version& a, const Version& b) {
  if (auto c = a.m_epoch <=> b.m_epoch; c != 0) return c;
  // Release, zero-padded (equivalent to stripping trailing zeros).
  const std::size_t n = std::max(a.m_release.size(), b.m_release.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = i < a.m_release.size() ? a.m_release[i] : 0;
    std::uint64_t y = i < b.m_release.size() ? b.m_release[i] : 0;
    if (auto c = x <=> y; c != 0) return c;
  }
  // pre: dev-only (no pre, no post) → −∞; no pre → +∞; else (kind, n).
  auto pre_inf = [](const Version& v) {
    if (!v.m_pre && !v.m_post && v.m_dev) return -1;
    if (!v.m_pre) return 1;
    return 0;
  };
  auto pre_val = [](const Version& v) {
    return v.m_pre ? std::pair{static_cast<int>(v.m_pre->first), v.m_pre->second} : std::pair{0, std::uint64_t{0}};
  };
  if (auto c = cmp_opt_key(pre_inf(a), pre_val(a), pre_inf(b), pre_val(b)); c != 0) return c;
  if (auto c = cmp_opt_key(a.m_post ? 0 : -1, a.m_post.value_or(0), b.m_post ? 0 : -1, b.m_post.value_or(0)); c != 0) return c;
  if (auto c = cmp_opt_key(a.m_dev ? 0 : 1, a.m_dev.value_or(0), b.m_dev ? 0 : 1, b.m_dev.value_or(0)); c != 0) return c;
  // local: none → −∞; else segment-wise, shorter prefix first.
  if (a.m_local.empty() || b.m_local.empty()) return !a.m_local.empty() <=> !b.m_local.empty();
  const std::size_t m = std::min(a.m_local.size(), b.m_local.size());
  for (std::size_t i = 0; i < m; ++i)
    if (auto c = cmp_local_seg(a.m_local[i], b.m_local[i]); c != 0) return c;
  return a.m_local.size() <=> b.m_local.size();
}

} // namespace envfix::specs
