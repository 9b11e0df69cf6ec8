#pragma once
// PEP 503 HTML and PEP 691 JSON project pages -> Candidate values (identical for both forms).
// Pure functions over untrusted text: no I/O, fuzzed (fuzz/fuzz_html_page.cpp, fuzz_json_page.cpp).
#include <string>
#include <string_view>
#include <vector>

#include "index/candidate.hpp"
#include "util/error.hpp"

namespace envfix::index {

struct PageContext {
  std::string page_url;  // final URL after redirects: relative hrefs resolve against it (RFC 3986; a <base href> wins)
  std::string project;   // the project asked for (normalized into Candidate::project)
  std::string index_url; // recorded in Candidate::index_url (credentials stripped)
  // Keep only files whose filename names `project` (find-links pages list many projects).
  bool filter_by_project = false;
  // A page with more anchors than this is refused before it is parsed (docs/reliability.md §2:
  // 16 MiB of short anchors cost 1.9 GB as one parse tree); a JSON page with more `files` entries
  // stops parsing at the first one past it. PyPI's and PyTorch's largest project pages list tens of
  // thousands of files.
  std::size_t max_anchors = 250'000;
};

struct ProjectPage {
  std::vector<Candidate> candidates;
  std::string api_version = "1.0";
  std::vector<util::Message> warnings; // skipped anchors, newer minor api-version, …
};

// Content types of the simple API (PEP 691 content negotiation).
inline constexpr std::string_view accept_header =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";
enum class PageFormat { html, json, unknown };
[[nodiscard]] PageFormat page_format_from_content_type(std::string_view content_type);

// The page is parsed in slices of at most 1024 anchors, each cut just before an anchor's `<a` and
// parsed as its own document, so the parser's tree never holds more than one slice: memory grows
// with the candidates found, not with the page's tag count. (<base> and <meta> are looked for in
// every slice that mentions them; the first <base href> still applies to every anchor.)
[[nodiscard]] Expected<ProjectPage> parse_html_page(std::string_view html, const PageContext& ctx);
[[nodiscard]] Expected<ProjectPage> parse_json_page(std::string_view json, const PageContext& ctx);

// Project name encoded in a distribution filename ("torch-2.7.0+cu128-…whl" -> "torch"), normalized;
// "" when the name is not a wheel or sdist.
[[nodiscard]] std::string project_of_filename(std::string_view filename);

} // namespace envfix::index
