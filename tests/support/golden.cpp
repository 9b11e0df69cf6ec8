#include "tests/support/golden.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "util/fs.hpp"

namespace envfix::testing {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t i = 0; !from.empty() && (i = text.find(from, i)) != std::string::npos; i += to.size())
    text.replace(i, from.size(), to);
}

} // namespace

std::string filter_transcript(std::string text, std::vector<std::pair<std::string, std::string>> literals) {
  // Longest first: a temp root must not be cut by a shorter prefix of it.
  std::sort(literals.begin(), literals.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [from, to] : literals) replace_all(text, from, to);
  static const std::pair<std::regex, const char*> rules[] = {
      {std::regex(R"re(\b\d+(\.\d+)?(ms|s)\b)re"), "<t>"},
      {std::regex(R"re("([a-z_]*seconds|[a-z_]+_s)": [0-9.e+-]+)re"), "\"$1\": <t>"},
      {std::regex(R"re(sha256[:=][0-9a-f]{64})re"), "sha256:<hash>"},
      {std::regex(R"re("(sha256|metadata_sha256)": "[0-9a-f]{64}")re"), "\"$1\": \"<hash>\""},
      {std::regex(R"re(Python \d+\.\d+\.\d+ \(cp\d+(, glibc \d+\.\d+)?\))re"), "Python <python>"},
      {std::regex(R"re(\bpython3\.\d+\b)re"), "python3.<minor>"},
      {std::regex(R"re(\bcp3\d+t?\b)re"), "<cp>"},
      {std::regex(R"re(\b3\.\d+\.\d+ \((cp|<cp>))re"), "<pyver> ($1"},
      {std::regex(R"re("(version|python)": "3\.\d+\.\d+")re"), "\"$1\": \"<pyver>\""},
      {std::regex(R"re(driver [^;\n]+;)re"), "driver <driver>;"},
      {std::regex(R"re(\((clone|hardlink|copy)(, )?)re"), "(<link-mode>$2"},
      {std::regex(R"re(\d+(\.\d+)? (B|KiB|MiB))re"), "<size>"},
      {std::regex(R"re("(size|download_size|backup_bytes)": \d+)re"), "\"$1\": <size>"},
      {std::regex(R"re(https?://127\.0\.0\.1:\d+)re"), "<https>"},
      {std::regex(R"re(transaction [0-9a-zA-Z_.-]+)re"), "transaction <id>"},
      {std::regex(R"re(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?)re"), "<date>"},
  };
  for (const auto& [re, to] : rules) text = std::regex_replace(text, re, to);
  return text;
}

std::string unified_diff(const std::string& a_text, const std::string& b_text, const std::string& name_a,
                         const std::string& name_b) {
  const auto a = lines_of(a_text), b = lines_of(b_text);
  const std::size_t n = a.size(), m = b.size();
  // Longest common subsequence, then the edit script walked from the start (transcripts are short).
  std::vector<std::vector<std::uint32_t>> lcs(n + 1, std::vector<std::uint32_t>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;) lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op {
    char kind;
    std::size_t ai, bi;
  }; // ' ', '-', '+'; line indexes before the op
  std::vector<Op> ops;
  for (std::size_t i = 0, j = 0; i < n || j < m;) {
    if (i < n && j < m && a[i] == b[j])
      ops.push_back({' ', i++, j++});
    else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]))
      ops.push_back({'-', i++, j}); // removals first
    else
      ops.push_back({'+', i, j++});
  }
  std::string out;
  constexpr std::size_t context = 3;
  for (std::size_t k = 0; k < ops.size();) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    // A hunk: `context` lines around its changes; changes closer than 2 × context share one.
    const std::size_t begin = k >= context ? k - context : 0;
    std::size_t last = k;
    for (std::size_t t = k + 1; t < ops.size(); ++t) {
      if (ops[t].kind != ' ')
        last = t;
      else if (t - last > 2 * context)
        break;
    }
    const std::size_t end = std::min(ops.size(), last + 1 + context);
    std::size_t na = 0, nb = 0;
    for (std::size_t t = begin; t < end; ++t) {
      na += ops[t].kind != '+';
      nb += ops[t].kind != '-';
    }
    if (out.empty()) out = fmt::format("--- {}\n+++ {}\n", name_a, name_b);
    out += fmt::format("@@ -{},{} +{},{} @@\n", ops[begin].ai + (na ? 1 : 0), na, ops[begin].bi + (nb ? 1 : 0), nb);
    for (std::size_t t = begin; t < end; ++t) {
      const auto& line = ops[t].kind == '+' ? b[ops[t].bi] : a[ops[t].ai];
      out += fmt::format("{}{}\n", ops[t].kind, line);
    }
    k = end;
  }
  return out;
}

std::string golden_mismatch(const std::filesystem::path& file, const std::string& text) {
  // A test switch, not an envfix variable.
  if (const char* u = std::getenv("ENVFIX_UPDATE_GOLDEN"); u && std::string_view(u) == "1") {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    auto w = util::write_file_atomic(file, text, 0644);
    return w ? std::string() : fmt::format("cannot write {}: {}", file.string(), w.error().message);
  }
  auto want = util::read_file(file);
  if (!want) return fmt::format("missing golden file {} (ENVFIX_UPDATE_GOLDEN=1 writes it)", file.string());
  if (*want == text) return {};
  auto diff = unified_diff(*want, text, file.string(), "this run");
  if (diff.empty()) diff = "(the texts differ only in their last newline)\n";
  return fmt::format("{} differs from this run (ENVFIX_UPDATE_GOLDEN=1 rewrites it after a deliberate change):\n{}",
                     file.filename().string(), diff);
}

std::vector<std::string> english_sentences(const std::string& transcript) {
  static const std::regex values(
      R"(`[^`]*`|git clone .*|envfix [a-z]+ .*|\w+Error: .*|Traceback \(most recent call last\):|File ".*|raise .*|"[^"]*"|\S+://\S+|/\S+|--\S+|\S*[0-9]\S*|\b[a-z]+(-[a-z]+)+\b|<[^>]*>)");
  static const std::regex words(R"([A-Za-z]{2,}( +[A-Za-z]{2,}){2,})");
  std::vector<std::string> out;
  for (const auto& l : lines_of(transcript)) {
    if (l.starts_with("$ envfix") || l.starts_with("[exit")) continue;
    if (std::regex_search(std::regex_replace(l, values, " "), words)) out.push_back(l);
  }
  return out;
}

} // namespace envfix::testing
