#include "specs/tag.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "util/strings.hpp"

namespace envfix::specs {

namespace {

using util::lower;

// "<what>: <why>" followed by the input and a caret under the offending position.
Error tag_error(std::string_view what, std::string_view text, std::size_t pos, std::string_view why) {
  return Error{
      ErrorCode::invalid_input, fmt::format("invalid {} '{}': {}\n  {}\n  {:>{}}", what, text, why, text, "^", pos + 1), {}, {}};
}

bool is_tag_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

// Splits on '-' into exactly three fields; `allow_dots` permits compressed sets.
Expected<std::array<std::string_view, 3>> split_tag(std::string_view text, bool allow_dots) {
  std::array<std::string_view, 3> parts;
  std::size_t start = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != '-') {
      char c = text[i];
      if (!is_tag_char(c) && !(allow_dots && c == '.')) {
        if (c == '.') return std::unexpected(tag_error("tag", text, i, "'.' separates a compressed tag set; parse it as a set"));
        return std::unexpected(tag_error("tag", text, i, fmt::format("unexpected character '{}'", c)));
      }
      continue;
    }
    if (n == 3) return std::unexpected(tag_error("tag", text, start - 1, "more than 3 '-'-separated fields"));
    if (i == start) return std::unexpected(tag_error("tag", text, i, "empty field"));
    parts[n++] = text.substr(start, i - start);
    start = i + 1;
  }
  if (n != 3)
    return std::unexpected(tag_error("tag", text, text.size(), "expected interpreter-abi-platform (3 '-'-separated fields)"));
  return parts;
}

std::vector<std::string_view> split_dots(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::string version_nodot(int major, int minor) { return fmt::format("{}{}", major, minor); }

bool manylinux_arch(std::string_view arch) {
  static constexpr std::array<std::string_view, 9> k_archs = {"x86_64",  "i686",  "aarch64",     "armv7l", "ppc64",
                                                              "ppc64le", "s390x", "loongarch64", "riscv64"};
  return std::ranges::find(k_archs, arch) != k_archs.end();
}

void manylinux_platforms(const TagEnvironment& env, std::vector<std::string>& out) {
  if (!env.glibc || !manylinux_arch(env.arch)) return;
  // glibc 2.5 is manylinux1's floor on x86; elsewhere manylinux2014 (2.17) is the oldest.
  const bool x86 = env.arch == "x86_64" || env.arch == "i686";
  const std::pair<int, int> too_old{2, x86 ? 4 : 16};
  const auto [cur_major, cur_minor] = *env.glibc;
  // packaging: the current version, then every older major at its last minor (assumed 50).
  std::vector<std::pair<int, int>> maxima{{cur_major, cur_minor}};
  for (int m = cur_major - 1; m > 1; --m) maxima.emplace_back(m, 50);
  for (auto [major, max_minor] : maxima) {
    int min_minor = major == too_old.first ? too_old.second : -1;
    for (int minor = max_minor; minor > min_minor; --minor) {
      out.push_back(fmt::format("manylinux_{}_{}_{}", major, minor, env.arch));
      const char* legacy = nullptr;
      if (major == 2 && minor == 17) legacy = "manylinux2014";
      if (major == 2 && minor == 12) legacy = "manylinux2010";
      if (major == 2 && minor == 5) legacy = "manylinux1";
      if (legacy) out.push_back(fmt::format("{}_{}", legacy, env.arch));
    }
  }
}

Expected<int> parse_small_int(std::string_view s, std::string_view whole, std::size_t pos) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || p != s.data() + s.size() || v > 10000)
    return std::unexpected(tag_error("platform tag", whole, pos, "expected a number"));
  return v;
}

} // namespace

Expected<Tag> Tag::parse(std::string_view text) {
  auto parts = ENVFIX_TRY(split_tag(text, false));
  return Tag{lower(parts[0]), lower(parts[1]), lower(parts[2])};
}

std::string Tag::to_string() const { return fmt::format("{}-{}-{}", interpreter, abi, platform); }

Expected<std::vector<Tag>> parse_tag_set(std::string_view text) {
  auto parts = ENVFIX_TRY(split_tag(text, true));
  std::array<std::vector<std::string_view>, 3> fields;
  std::size_t offset = 0;
  for (std::size_t f = 0; f < 3; ++f) {
    fields[f] = split_dots(parts[f]);
    std::size_t pos = offset;
    for (auto item : fields[f]) {
      if (item.empty()) return std::unexpected(tag_error("tag set", text, pos, "empty item in compressed tag set"));
      pos += item.size() + 1;
    }
    offset += parts[f].size() + 1;
  }
  std::vector<Tag> out;
  for (auto i : fields[0])
    for (auto a : fields[1])
      for (auto p : fields[2]) {
        Tag t{lower(i), lower(a), lower(p)};
        if (std::ranges::find(out, t) == out.end()) out.push_back(std::move(t));
      }
  return out;
}

Expected<void> apply_platform_tag(TagEnvironment& env, std::string_view platform) {
  const std::string p = lower(platform);
  auto take_arch = [&](std::size_t pos) -> Expected<std::string> {
    if (pos >= p.size()) return std::unexpected(tag_error("platform tag", platform, p.size(), "missing architecture"));
    return p.substr(pos);
  };
  // Parses "<X>_<Y>_" at pos; returns the version and the position after it.
  auto take_version = [&](std::size_t pos) -> Expected<std::pair<std::pair<int, int>, std::size_t>> {
    std::size_t u1 = p.find('_', pos);
    if (u1 == std::string::npos)
      return std::unexpected(tag_error("platform tag", platform, pos, "expected <major>_<minor>_<arch>"));
    std::size_t u2 = p.find('_', u1 + 1);
    if (u2 == std::string::npos)
      return std::unexpected(tag_error("platform tag", platform, u1 + 1, "expected <major>_<minor>_<arch>"));
    int major = ENVFIX_TRY(parse_small_int(std::string_view(p).substr(pos, u1 - pos), platform, pos));
    int minor = ENVFIX_TRY(parse_small_int(std::string_view(p).substr(u1 + 1, u2 - u1 - 1), platform, u1 + 1));
    return std::pair{std::pair{major, minor}, u2 + 1};
  };
  static constexpr std::array<std::pair<std::string_view, std::pair<int, int>>, 3> k_legacy = {
      {{"manylinux2014_", {2, 17}}, {"manylinux2010_", {2, 12}}, {"manylinux1_", {2, 5}}}};
  for (auto [prefix, glibc] : k_legacy) {
    if (p.starts_with(prefix)) {
      env.arch = ENVFIX_TRY(take_arch(prefix.size()));
      env.glibc = glibc;
      env.musl.reset();
      return {};
    }
  }
  if (p.starts_with("manylinux_")) {
    auto [ver, pos] = ENVFIX_TRY(take_version(10));
    env.arch = ENVFIX_TRY(take_arch(pos));
    env.glibc = ver;
    env.musl.reset();
    return {};
  }
  if (p.starts_with("musllinux_")) {
    auto [ver, pos] = ENVFIX_TRY(take_version(10));
    env.arch = ENVFIX_TRY(take_arch(pos));
    env.musl = ver;
    env.glibc.reset();
    return {};
  }
  if (p.starts_with("linux_")) {
    env.arch = ENVFIX_TRY(take_arch(6));
    env.glibc.reset();
    env.musl.reset();
    return {};
  }
  return std::unexpected(Error(tag_error("platform tag", platform, 0, "not a Linux platform tag"))
                             .with_hint(util::msg("use manylinux_<glibc major>_<minor>_<arch>, manylinux2014_<arch>, "
                                                  "musllinux_<major>_<minor>_<arch> or linux_<arch>")));
}

std::optional<ManylinuxTag> manylinux_glibc(std::string_view platform) {
  TagEnvironment env;
  if (!apply_platform_tag(env, platform) || !env.glibc) return std::nullopt;
  return ManylinuxTag{*env.glibc, env.arch};
}

std::vector<std::string> platform_tags(const TagEnvironment& env) {
  std::vector<std::string> out;
  const std::string linux = fmt::format("linux_{}", env.arch);
  if (env.linux_first) out.push_back(linux);
  manylinux_platforms(env, out);
  if (env.musl)
    for (int minor = env.musl->second; minor >= 0; --minor)
      out.push_back(fmt::format("musllinux_{}_{}_{}", env.musl->first, minor, env.arch));
  if (!env.linux_first) out.push_back(linux);
  return out;
}

std::vector<std::string> cpython_abis(const TagEnvironment& env) {
  // Mirrors packaging's _cpython_abis: flags are assembled in the order t, d, m.
  const std::string version = version_nodot(env.major, env.minor);
  const bool debug = env.abiflags.find('d') != std::string::npos;
  const bool threaded = (env.major > 3 || (env.major == 3 && env.minor >= 13)) && env.abiflags.find('t') != std::string::npos;
  const bool old = env.major < 3 || (env.major == 3 && env.minor < 8);
  const bool pymalloc = old && env.abiflags.find('m') != std::string::npos;
  std::string thr = threaded ? "t" : "";
  std::vector<std::string> abis;
  abis.push_back(fmt::format("cp{}{}{}{}", version, thr, debug ? "d" : "", pymalloc ? "m" : ""));
  // Debug builds can also load normal extension modules.
  if (debug && !old) abis.push_back(fmt::format("cp{}{}", version, thr));
  return abis;
}

std::vector<Tag> supported_tags(const TagEnvironment& env) {
  const std::vector<std::string> platforms = platform_tags(env);
  std::vector<Tag> out;
  const std::string interpreter = fmt::format("{}{}", env.implementation, version_nodot(env.major, env.minor));
  if (env.implementation == "cp") {
    const std::vector<std::string> abis = cpython_abis(env);
    const bool threaded = std::ranges::any_of(abis, [](const std::string& a) { return a.ends_with('t'); });
    const bool use_abi3 = (env.major > 3 || (env.major == 3 && env.minor >= 2)) && !threaded;
    for (const auto& abi : abis)
      for (const auto& p : platforms) out.push_back({interpreter, abi, p});
    if (use_abi3)
      for (const auto& p : platforms) out.push_back({interpreter, "abi3", p});
    for (const auto& p : platforms) out.push_back({interpreter, "none", p});
    if (use_abi3)
      for (int m = env.minor - 1; m > 1; --m)
        for (const auto& p : platforms) out.push_back({"cp" + version_nodot(env.major, m), "abi3", p});
  } else {
    // packaging generic_tags() without a known SOABI: only the "none" ABI.
    for (const auto& p : platforms) out.push_back({interpreter, "none", p});
  }
  // compatible_tags()
  std::vector<std::string> py_range;
  py_range.push_back("py" + version_nodot(env.major, env.minor));
  py_range.push_back(fmt::format("py{}", env.major));
  for (int m = env.minor - 1; m >= 0; --m) py_range.push_back("py" + version_nodot(env.major, m));
  for (const auto& py : py_range)
    for (const auto& p : platforms) out.push_back({py, "none", p});
  out.push_back({interpreter, "none", "any"});
  for (const auto& py : py_range) out.push_back({py, "none", "any"});
  return out;
}

TagRanking::TagRanking(std::vector<Tag> tags) : m_tags(std::move(tags)) {
  m_index.reserve(m_tags.size());
  for (std::size_t i = 0; i < m_tags.size(); ++i)
    m_index.try_emplace(lower(m_tags[i].to_string()), i); // first occurrence is the best rank
}

std::optional<std::size_t> TagRanking::rank(const Tag& tag) const {
  auto it = m_index.find(lower(tag.to_string()));
  if (it == m_index.end()) return std::nullopt;
  return it->second;
}

std::optional<std::size_t> TagRanking::best_rank(const std::vector<Tag>& tags) const {
  std::optional<std::size_t> best;
  for (const auto& t : tags) {
    auto r = rank(t);
    if (r && (!best || *r < *best)) best = r;
  }
  return best;
}

} // namespace envfix::specs
