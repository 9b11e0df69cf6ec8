#pragma once
// Golden transcripts (tests/fixtures/golden/, README there): a command's whole output compared with a
// stored file after filtering what differs between runs and machines. ENVFIX_UPDATE_GOLDEN=1 rewrites
// the files instead of comparing; a mismatch comes back as a unified diff of stored against got.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace envfix::testing {

// `text` with each literal (a temp root, an index URL) replaced by its placeholder, longest first, then
// the rules every transcript needs: durations (<t>), sha256 digests, loopback ports, the interpreter's
// version and tags, sizes, the link mode, transaction ids, dates.
[[nodiscard]] std::string filter_transcript(std::string text, std::vector<std::pair<std::string, std::string>> literals = {});

// "" when `file` holds exactly `text`; else a message with the unified diff (or the missing file).
// With ENVFIX_UPDATE_GOLDEN=1 the file is (re)written and "" returned.
[[nodiscard]] std::string golden_mismatch(const std::filesystem::path& file, const std::string& text);

// A unified diff (3 lines of context) from `a` to `b`; "" when they are equal.
[[nodiscard]] std::string unified_diff(const std::string& a, const std::string& b, const std::string& name_a,
                                       const std::string& name_b);

// The lines of a zh_CN transcript that still hold an English sentence (issue 56, item 9): three words
// of Latin letters in a row, once the values a translation keeps as they are are taken out: the
// command lines, backtick spans, what follows a printed command (`git clone …`, `envfix apply …`), a
// program's own traceback (`Traceback …`, `raise …`, `RuntimeError: CUDA error: …`) and quoted words, URLs and paths,
// options, names with versions and archs ("torch 2.7.0+cu126", "sm_120"), and stable codes
// ("arch-not-covered").
[[nodiscard]] std::vector<std::string> english_sentences(const std::string& transcript);

} // namespace envfix::testing
