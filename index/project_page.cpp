#include "index/project_page.hpp"

#include <gumbo.h>

#include <charconv>
#include <memory>

#include <nlohmann/json.hpp>

#include "index/url.hpp"
#include "util/strings.hpp"

// ENVFIX_TRY for Expected<void>.
namespace envfix::index {

namespace {

constexpr int implemented_minor = 1; // PEP 700

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// PEP 629 repository version (PEP 691 `meta.api-version`): "1.1" -> ok; major > 1 fails; minor >
// implemented warns.
Expected<void> check_api_version(std::string_view v, const PageContext& ctx, ProjectPage& page) {
  page.api_version = std::string(v);
  int major = 0, minor = 0;
  auto dot = v.find('.');
  auto r1 = std::from_chars(v.data(), v.data() + (dot == std::string_view::npos ? v.size() : dot), major);
  if (r1.ec != std::errc{} || dot == std::string_view::npos ||
      std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor).ec != std::errc{})
    return fail(ErrorCode::invalid_input, "{}: invalid repository api-version {:?}", redact_url(ctx.page_url), std::string(v));
  if (major > 1)
    return make_error(
        ErrorCode::invalid_input,
        fmt::format("{}: repository api-version {} is not supported (major version {} > 1)", redact_url(ctx.page_url), v, major),
        "upgrade envfix, or use an index that serves the version 1 simple API");
  if (minor > implemented_minor)
    page.warnings.push_back(
        util::msg("{}: api-version {} is newer than the implemented 1.{}", redact_url(ctx.page_url), v, implemented_minor));
  return {};
}

bool is_remote(std::string_view page_url) {
  auto s = url_scheme(page_url);
  return s == "http" || s == "https";
}

// Builds a Candidate from an href (already entity-decoded) and the page context. Returns nullopt
// (with a warning) for anchors that must be skipped.
// Per-page values every anchor shares (computed once: pages have thousands of anchors).
struct PageConstants {
  std::string project;   // normalized
  std::string index_url; // credentials stripped
  UrlResolver base;      // ctx.page_url, parsed once
  explicit PageConstants(const PageContext& ctx)
      : project(normalize_project_name(ctx.project)), index_url(strip_credentials(ctx.index_url)), base(ctx.page_url) {}
};

std::optional<Candidate> candidate_from_href(std::string_view href, const PageContext& ctx, const PageConstants& k,
                                             ProjectPage& page) {
  auto resolved = k.base.resolve(href);
  if (!resolved) {
    page.warnings.push_back(
        util::msg("skipped anchor {}: {}", fmt::format("{:?}", redact_url(href)), resolved.error().said_message()));
    return std::nullopt;
  }
  std::string scheme = url_scheme(*resolved);
  if (scheme != "http" && scheme != "https" && scheme != "file") {
    page.warnings.push_back(
        util::msg("skipped anchor with scheme {}: {}", fmt::format("{:?}", scheme), redact_url(href).substr(0, 80)));
    return std::nullopt;
  }
  // A remote page must not make envfix read local files (issue 10): file: only from local pages.
  if (scheme == "file" && is_remote(ctx.page_url)) {
    page.warnings.push_back(util::msg("skipped file: anchor on a remote page: {}", redact_url(href).substr(0, 80)));
    return std::nullopt;
  }
  auto [url, fragment] = split_fragment(*resolved);
  Candidate c;
  c.filename = url_filename(url);
  if (c.filename.empty()) {
    page.warnings.push_back(util::msg("skipped anchor without a file name: {}", redact_url(url)));
    return std::nullopt;
  }
  c.project = k.project;
  if (ctx.filter_by_project && project_of_filename(c.filename) != c.project) return std::nullopt;
  c.url = std::move(url);
  c.index_url = k.index_url;
  // PEP 503 `#<hashname>=<hex>`: hash from the (percent-decoded) fragment; "#egg=…" and others
  // are ignored.
  std::string frag = percent_decode(fragment);
  std::size_t pos = 0;
  while (pos <= frag.size()) {
    std::size_t amp = frag.find('&', pos);
    std::string_view part = std::string_view(frag).substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (part.starts_with("sha256=") && is_hex(part.substr(7))) c.sha256 = util::lower(part.substr(7));
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return c;
}

// "true" | "sha256=<hex>" | "false"/absent (PEP 658 `data-dist-info-metadata`, PEP 714
// `data-core-metadata`).
void apply_core_metadata(std::string_view value, Candidate& c) {
  std::string v = util::lower(value);
  if (v == "false") return;
  c.has_metadata = true;
  if (v.starts_with("sha256=") && is_hex(std::string_view(v).substr(7))) c.metadata_sha256 = v.substr(7);
}

const GumboAttribute* attr(const GumboElement& el, const char* name) { return gumbo_get_attribute(&el.attributes, name); }

struct GumboDeleter {
  void operator()(GumboOutput* o) const { gumbo_destroy_output(&kGumboDefaultOptions, o); }
};

} // namespace

PageFormat page_format_from_content_type(std::string_view content_type) {
  const std::string ct = util::lower(util::trim(content_type.substr(0, content_type.find(';'))));
  if (ct == "application/vnd.pypi.simple.v1+json") return PageFormat::json;
  if (ct == "application/vnd.pypi.simple.v1+html" || ct == "text/html") return PageFormat::html;
  return PageFormat::unknown;
}

std::string project_of_filename(std::string_view filename) {
  if (filename.ends_with(".whl")) {
    auto dash = filename.find('-');
    if (dash == std::string_view::npos) return {};
    return normalize_project_name(filename.substr(0, dash));
  }
  for (std::string_view ext : {".tar.gz", ".zip", ".tar.bz2", ".tgz"}) {
    if (filename.ends_with(ext)) {
      std::string_view stem = filename.substr(0, filename.size() - ext.size());
      auto dash = stem.rfind('-');
      if (dash == std::string_view::npos) return {};
      return normalize_project_name(stem.substr(0, dash));
    }
  }
  return {};
}

namespace {

// Offsets of "<a" followed by whitespace, '/' or '>' (any case): where anchors start. Stops after
// `limit` + 1, which is enough to refuse the page.
std::vector<std::size_t> anchor_starts(std::string_view html, std::size_t limit) {
  std::vector<std::size_t> out;
  for (std::size_t i = html.find('<'); i != std::string_view::npos && i + 2 < html.size(); i = html.find('<', i + 1)) {
    char a = html[i + 1], next = html[i + 2];
    if ((a == 'a' || a == 'A') &&
        (next == ' ' || next == '\t' || next == '\n' || next == '\r' || next == '\f' || next == '/' || next == '>')) {
      out.push_back(i);
      if (out.size() > limit) break;
    }
  }
  return out;
}

bool mentions(std::string_view text, std::string_view tag) {
  for (std::size_t i = text.find('<'); i != std::string_view::npos; i = text.find('<', i + 1)) {
    if (text.size() - i - 1 < tag.size()) return false;
    if (util::lower(text.substr(i + 1, tag.size())) == tag) return true;
  }
  return false;
}

// Calls fn on every element of one slice, in document order (iteratively: deeply nested junk must
// not overflow the stack).
template <class Fn>
Expected<void> walk_slice(std::string_view slice, const PageContext& ctx, Fn&& fn) {
  std::unique_ptr<GumboOutput, GumboDeleter> out(gumbo_parse_with_options(&kGumboDefaultOptions, slice.data(), slice.size()));
  if (!out) return fail(ErrorCode::invalid_input, "{}: HTML parser failed", redact_url(ctx.page_url));
  std::vector<const GumboNode*> stack{out->root};
  while (!stack.empty()) {
    const GumboNode* n = stack.back();
    stack.pop_back();
    if (n->type != GUMBO_NODE_ELEMENT && n->type != GUMBO_NODE_TEMPLATE) continue;
    const GumboElement& el = n->v.element;
    ENVFIX_TRY_VOID(fn(el));
    for (unsigned i = el.children.length; i-- > 0;) stack.push_back(static_cast<const GumboNode*>(el.children.data[i]));
  }
  return {};
}

// The first <base href> and the api-version <meta>.
Expected<void> base_or_meta(const GumboElement& el, const PageContext& ctx, PageContext& local, bool& have_base,
                            ProjectPage& page) {
  if (el.tag == GUMBO_TAG_BASE && !have_base) {
    if (auto* h = attr(el, "href")) {
      if (auto b = resolve_url(ctx.page_url, h->value)) {
        // <base href="file:///"> on a remote page would turn every anchor into a local path.
        if (url_scheme(*b) == "file" && is_remote(ctx.page_url))
          page.warnings.push_back(util::msg("ignored <base href> {} on a remote page", fmt::format("{:?}", redact_url(*b))));
        else
          local.page_url = *b;
        have_base = true;
      }
    }
  } else if (el.tag == GUMBO_TAG_META) {
    auto* name = attr(el, "name");
    auto* content = attr(el, "content");
    if (name && content && std::string_view(name->value) == "pypi:repository-version")
      ENVFIX_TRY_VOID(check_api_version(content->value, ctx, page));
  }
  return {};
}

void add_anchor(const GumboElement& el, const PageContext& local, const PageConstants& k, ProjectPage& page) {
  auto* href = attr(el, "href");
  if (!href) return;
  auto c = candidate_from_href(href->value, local, k, page);
  if (!c) return;
  if (auto* rp = attr(el, "data-requires-python")) c->requires_python = std::string(rp->value);
  if (auto* y = attr(el, "data-yanked")) {
    c->yanked = true;
    c->yanked_reason = y->value;
  }
  if (auto* m = attr(el, "data-core-metadata"))
    apply_core_metadata(m->value, *c);
  else if (auto* m2 = attr(el, "data-dist-info-metadata"))
    apply_core_metadata(m2->value, *c);
  page.candidates.push_back(std::move(*c));
}

} // namespace

Expected<ProjectPage> parse_html_page(std::string_view html, const PageContext& ctx) {
  ProjectPage page;
  const auto starts = anchor_starts(html, ctx.max_anchors);
  if (starts.size() > ctx.max_anchors)
    return make_error(ErrorCode::invalid_input,
                      util::msg("{}: the page lists more than {} anchors", redact_url(ctx.page_url), ctx.max_anchors),
                      util::msg("the index page is broken or hostile; no index needs that many files for one project"));
  // Slice boundaries: every 1024th anchor start.
  constexpr std::size_t per_slice = 1024;
  std::vector<std::string_view> slices;
  std::size_t from = 0;
  for (std::size_t j = per_slice; j < starts.size(); j += per_slice) {
    slices.push_back(html.substr(from, starts[j] - from));
    from = starts[j];
  }
  slices.push_back(html.substr(from));

  // Pass 1: <base> and <meta>, in the slices that mention them.
  PageContext local = ctx;
  bool have_base = false;
  for (auto slice : slices) {
    if (!mentions(slice, "base") && !mentions(slice, "meta")) continue;
    ENVFIX_TRY_VOID(walk_slice(
        slice, ctx, [&](const GumboElement& el) -> Expected<void> { return base_or_meta(el, ctx, local, have_base, page); }));
  }
  // Pass 2: anchors, one slice's tree at a time.
  page.candidates.reserve(starts.size());
  const PageConstants k(local);
  for (auto slice : slices)
    ENVFIX_TRY_VOID(walk_slice(slice, ctx, [&](const GumboElement& el) -> Expected<void> {
      if (el.tag == GUMBO_TAG_A) add_anchor(el, local, k, page);
      return {};
    }));
  return page;
}

namespace {

// PEP 691 pages are read with nlohmann's SAX interface, not into a document: a torch page lists tens
// of thousands of files, and its DOM (a std::map per file) cost more than the lexing. The reader
// keeps only the fields used below, with a document's rules: a repeated key replaces the earlier
// value, a value of the wrong type counts as absent; checks run after the parse in the order the
// document version had (meta, then files in order).
struct JsonMetadataField { // "core-metadata" / "dist-info-metadata"
  bool present = false;
  std::optional<bool> flag;
  bool is_object = false;
  std::optional<std::string> sha256;
};
struct JsonFile {
  bool is_object = false;
  std::optional<std::string> url, filename, sha256, requires_python;
  std::optional<bool> yanked_flag;
  std::optional<std::string> yanked_reason;
  JsonMetadataField core, dist_info;
  std::optional<std::uint64_t> size;
};

class PageSax final : public nlohmann::json_sax<nlohmann::json> {
public:
  explicit PageSax(std::size_t max_files) : m_max_files(max_files) {}
  bool top_is_object = false;
  bool too_many = false; // `files` passed m_max_files: parsing stopped there
  bool api_present = false, api_is_string = false;
  std::string api;
  bool files_present = false, files_is_array = false;
  std::vector<JsonFile> files;
  std::string error;

  bool null() override { return scalar(Value{}); }
  bool boolean(bool v) override { return scalar(Value{.flag = v}); }
  bool number_integer(number_integer_t) override { return scalar(Value{}); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(Value{.unsigned_number = v}); }
  bool number_float(number_float_t, const string_t&) override { return scalar(Value{}); }
  bool string(string_t& v) override { return scalar(Value{.text = &v}); }
  bool binary(binary_t&) override { return scalar(Value{}); }
  bool key(string_t& k) override {
    m_key = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }

private:
  enum class Frame { top, meta, files, file, hashes, core_md, dist_md, skip };
  struct Value {
    std::optional<bool> flag;
    std::optional<std::uint64_t> unsigned_number;
    std::string* text = nullptr;
  };
  std::vector<Frame> m_stack;
  std::string m_key;
  std::size_t m_max_files;

  // One more entry of `files`; false (stop parsing) past the cap: a 60 KB gzip'd page of `{},`
  // entries decompresses to 20 million of them, each a JsonFile and then a Candidate.
  bool add_file(bool is_object) {
    if (files.size() >= m_max_files) {
      too_many = true;
      return false;
    }
    files.emplace_back().is_object = is_object;
    return true;
  }

  JsonMetadataField& md(Frame f) { return f == Frame::core_md ? files.back().core : files.back().dist_info; }

  // A value (scalar or container) for the key m_key of the file being read.
  void file_field(const Value& v, bool is_object) {
    JsonFile& f = files.back();
    auto text = [&] { return v.text ? std::optional<std::string>(*v.text) : std::nullopt; };
    if (m_key == "url")
      f.url = text();
    else if (m_key == "filename")
      f.filename = text();
    else if (m_key == "requires-python")
      f.requires_python = text();
    else if (m_key == "size")
      f.size = v.unsigned_number;
    else if (m_key == "hashes")
      f.sha256.reset();
    else if (m_key == "yanked") {
      f.yanked_flag = v.text ? std::optional<bool>(true) : v.flag;
      f.yanked_reason = text();
    } else if (m_key == "core-metadata" || m_key == "dist-info-metadata") {
      (m_key == "core-metadata" ? f.core : f.dist_info) = JsonMetadataField{true, v.flag, is_object, std::nullopt};
    }
  }

  bool scalar(const Value& v) {
    if (m_stack.empty()) return true; // a scalar document: top_is_object stays false
    switch (m_stack.back()) {
    case Frame::top:
      if (m_key == "meta")
        api_present = false;
      else if (m_key == "files") {
        files_present = true;
        files_is_array = false;
        files.clear();
      }
      break;
    case Frame::meta:
      if (m_key == "api-version") {
        api_present = true;
        api_is_string = v.text != nullptr;
        if (v.text) api = *v.text;
      }
      break;
    case Frame::files:
      if (!add_file(false)) return false;
      break;
    case Frame::file: file_field(v, false); break;
    case Frame::hashes:
      if (m_key == "sha256") files.back().sha256 = v.text ? std::optional<std::string>(*v.text) : std::nullopt;
      break;
    case Frame::core_md:
    case Frame::dist_md:
      if (m_key == "sha256") md(m_stack.back()).sha256 = v.text ? std::optional<std::string>(*v.text) : std::nullopt;
      break;
    case Frame::skip: break;
    }
    return true;
  }

  bool open(bool object) {
    Frame next = Frame::skip;
    if (m_stack.empty()) {
      top_is_object = object;
      next = object ? Frame::top : Frame::skip;
    } else {
      switch (m_stack.back()) {
      case Frame::top:
        if (m_key == "meta") {
          api_present = false;
          if (object) next = Frame::meta;
        } else if (m_key == "files") {
          files_present = true;
          files_is_array = !object;
          files.clear();
          if (!object) next = Frame::files;
        }
        break;
      case Frame::meta:
        if (m_key == "api-version") {
          api_present = true;
          api_is_string = false;
        }
        break;
      case Frame::files:
        if (!add_file(object)) return false;
        if (object) next = Frame::file;
        break;
      case Frame::file:
        file_field(Value{}, object);
        if (object && m_key == "hashes")
          next = Frame::hashes;
        else if (object && m_key == "core-metadata")
          next = Frame::core_md;
        else if (object && m_key == "dist-info-metadata")
          next = Frame::dist_md;
        break;
      case Frame::hashes:
        if (m_key == "sha256") files.back().sha256.reset();
        break;
      case Frame::core_md:
      case Frame::dist_md:
        if (m_key == "sha256") md(m_stack.back()).sha256.reset();
        break;
      case Frame::skip: break;
      }
    }
    m_stack.push_back(next);
    return true;
  }

  bool close() {
    if (!m_stack.empty()) m_stack.pop_back();
    return true;
  }
};

void apply_json_fields(const JsonFile& f, Candidate& c) {
  if (f.sha256 && is_hex(*f.sha256)) c.sha256 = util::lower(*f.sha256);
  if (f.requires_python) c.requires_python = *f.requires_python;
  if (f.yanked_flag) {
    c.yanked = *f.yanked_flag;
    if (f.yanked_reason) c.yanked_reason = *f.yanked_reason;
  }
  const JsonMetadataField& md = f.core.present ? f.core : f.dist_info;
  if (md.flag)
    c.has_metadata = *md.flag;
  else if (md.is_object) {
    c.has_metadata = true;
    if (md.sha256 && is_hex(*md.sha256)) c.metadata_sha256 = util::lower(*md.sha256);
  }
  if (f.size) c.size = *f.size;
}

} // namespace

Expected<ProjectPage> parse_json_page(std::string_view text, const PageContext& ctx) {
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::invalid_input, "{}: invalid project page JSON: {}", redact_url(ctx.page_url), what);
  };
  PageSax sax(ctx.max_anchors);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &sax)) {
    if (sax.too_many)
      return make_error(ErrorCode::invalid_input,
                        util::msg("{}: the page lists more than {} files", redact_url(ctx.page_url), ctx.max_anchors),
                        util::msg("the index page is broken or hostile; no index needs that many files for one project"));
    return bad(sax.error.empty() ? "invalid JSON" : sax.error);
  }
  if (!sax.top_is_object) return bad("top level is not an object");
  ProjectPage page;
  if (sax.api_present) {
    if (!sax.api_is_string) return bad("meta.api-version is not a string");
    ENVFIX_TRY_VOID(check_api_version(sax.api, ctx, page));
  }
  if (!sax.files_present || !sax.files_is_array) return bad("\"files\" is missing or not a list");
  page.candidates.reserve(sax.files.size());
  const PageConstants k(ctx);
  for (std::size_t i = 0; i < sax.files.size(); ++i) {
    const JsonFile& f = sax.files[i];
    if (!f.is_object) return bad(fmt::format("files[{}] is not an object", i));
    if (!f.url) return bad(fmt::format("files[{}].url is missing or not a string", i));
    auto c = candidate_from_href(*f.url, ctx, k, page);
    if (!c) continue;
    if (f.filename && !f.filename->empty()) c->filename = *f.filename;
    if (ctx.filter_by_project && project_of_filename(c->filename) != c->project) continue;
    apply_json_fields(f, *c);
    page.candidates.push_back(std::move(*c));
  }
  return page;
}

} // namespace envfix::index
