#include "project/requirements_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <set>

#include <toml++/toml.h>

#include "specs/name.hpp"
#include "specs/requirement.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::project {

namespace fs = std::filesystem;

namespace {

// The lines of a requirements file as pip reads them: a line ending in `\` goes on with the next,
// a `#` at the start or after whitespace begins a comment, `${NAME}` is the named variable's value.
struct Line {
  std::string text;
  std::size_t number = 0;
};

std::string expand_variables(const std::string& s) {
  // pip expands only ${NAME} of capitals, digits and _ (pip's req_file.py, expand_env_variables);
  // the variables are the user's own, named by the file, so they cannot be listed in util/env.hpp.
  static const std::regex var(R"(\$\{([A-Z0-9_]+)\})");
  std::string out;
  auto it = std::sregex_iterator(s.begin(), s.end(), var);
  std::size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    out += s.substr(last, static_cast<std::size_t>(m.position(0)) - last);
    const char* v = std::getenv(m[1].str().c_str());
    out += v ? std::string(v) : m[0].str();
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  return out + s.substr(last);
}

std::string strip_comment(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(s[i - 1])))) return s.substr(0, i);
  return s;
}

std::vector<Line> logical_lines(const std::string& content) {
  std::vector<Line> out;
  std::string pending;
  std::size_t start = 0, number = 0;
  std::size_t from = 0;
  while (from < content.size()) {
    const auto nl = content.find('\n', from);
    std::string line = content.substr(from, nl == std::string::npos ? std::string::npos : nl - from);
    from = nl == std::string::npos ? content.size() : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (pending.empty()) start = number;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1);
      continue;
    }
    pending += line;
    const std::string expanded = expand_variables(strip_comment(pending));
    if (auto text = util::trim(expanded); !text.empty()) out.push_back({std::string(text), start});
    pending.clear();
  }
  const std::string rest = expand_variables(strip_comment(pending));
  if (auto text = util::trim(rest); !text.empty()) out.push_back({std::string(text), start});
  return out;
}

// The words of an option line: `-r file`, `-rfile`, `--requirement=file`, `--requirement file`.
struct Option {
  std::string name;  // as the long form spells it: "requirement"
  std::string value; // "" for a flag
};

const std::vector<std::pair<std::string, std::string>>& short_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"-r", "requirement"}, {"-c", "constraint"}, {"-i", "index-url"}, {"-f", "find-links"}, {"-e", "editable"}};
  return names;
}

bool takes_value(const std::string& name) {
  static const std::set<std::string> valued = {
      "requirement", "constraint",   "index-url", "extra-index-url", "find-links",    "editable",      "only-binary",
      "no-binary",   "trusted-host", "hash",      "config-settings", "global-option", "install-option"};
  return valued.contains(name);
}

// One option from `words` at `i`, advancing past its value.
Expected<Option> take_option(const std::vector<std::string>& words, std::size_t& i, const std::string& where) {
  std::string w = words[i++];
  Option o;
  if (w.starts_with("--")) {
    const auto eq = w.find('=');
    o.name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (eq != std::string::npos) o.value = w.substr(eq + 1);
  } else {
    const auto hit = std::ranges::find_if(short_names(), [&](const auto& p) { return w.starts_with(p.first); });
    if (hit == short_names().end())
      return make_error(ErrorCode::invalid_input, util::msg("{}: unknown option {}", where, w),
                        util::msg("envfix reads requirements files as pip does; README.md, the pip/uv table, lists "
                                  "the options it takes"));
    o.name = hit->second;
    o.value = w.substr(hit->first.size());
  }
  if (takes_value(o.name) && o.value.empty()) {
    if (i >= words.size()) return make_error(ErrorCode::invalid_input, util::msg("{}: --{} needs a value", where, o.name));
    o.value = words[i++];
  }
  return o;
}

Expected<std::string> sha256_of(const std::string& value, const std::string& where) {
  const auto colon = value.find(':');
  const std::string algo = util::lower(value.substr(0, colon == std::string::npos ? 0 : colon));
  std::string hex = colon == std::string::npos ? "" : util::lower(value.substr(colon + 1));
  if (algo != "sha256")
    return make_error(ErrorCode::invalid_input, util::msg("{}: --hash={} is not a sha256 digest", where, value),
                      util::msg("envfix checks sha256, which every index gives; `pip-compile --generate-hashes` "
                                "and `uv pip compile --generate-hashes` write sha256"));
  if (hex.size() != 64 || !std::ranges::all_of(hex, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return make_error(ErrorCode::invalid_input, util::msg("{}: --hash={} is not 64 hexadecimal digits", where, value));
  return hex;
}

struct Reader {
  const Extras& extras;
  FileInput& into;
  std::vector<fs::path> open; // the files being read, outermost first: a -r back to one is a loop

  Expected<void> read(const fs::path& path, FileRole role);
  Expected<void> read_lines(const fs::path& path, const std::string& content, FileRole role);
  Expected<void> option_line(const fs::path& path, const std::string& where, const std::vector<std::string>& words,
                             FileRole role);
  Expected<void> requirement_line(const std::string& where, const std::vector<std::string>& words, FileRole role);
  Expected<void> pyproject(const fs::path& path, const std::string& content, FileRole role);
};

fs::path beside(const fs::path& file, const std::string& value) {
  const fs::path p(value);
  return p.is_absolute() ? p : file.parent_path() / p;
}

Expected<void> Reader::option_line(const fs::path& path, const std::string& where, const std::vector<std::string>& words,
                                   FileRole role) {
  for (std::size_t i = 0; i < words.size();) {
    const auto o = ENVFIX_TRY(take_option(words, i, where));
    if (o.name == "requirement") {
      ENVFIX_TRY_VOID(read(beside(path, o.value), role));
    } else if (o.name == "constraint") {
      ENVFIX_TRY_VOID(read(beside(path, o.value), FileRole::constraints));
    } else if (o.name == "index-url") {
      into.index_url = o.value;
    } else if (o.name == "extra-index-url") {
      into.extra_index_urls.push_back(o.value);
    } else if (o.name == "find-links") {
      const bool url = o.value.find("://") != std::string::npos;
      into.find_links.push_back(url ? o.value : beside(path, o.value).lexically_normal().string());
    } else if (o.name == "no-index") {
      into.no_index = true;
    } else if (o.name == "pre") {
      into.pre = true;
    } else if (o.name == "require-hashes") {
      into.require_hashes = true;
    } else if (o.name == "prefer-binary" || o.name == "only-binary") {
      // envfix installs wheels only: both already hold.
    } else if (o.name == "editable") {
      return make_error(ErrorCode::invalid_input, util::msg("{}: -e {} is an editable install", where, o.value),
                        util::msg("envfix installs wheels; install the project itself with `pip install -e {}` "
                                  "after envfix has set up its dependencies",
                                  o.value));
    } else {
      return make_error(ErrorCode::invalid_input, util::msg("{}: --{} is not taken in a requirements file", where, o.name),
                        util::msg("envfix reads requirements files as pip does; README.md, the pip/uv table, lists "
                                  "the options it takes"));
    }
  }
  return {};
}

Expected<void> Reader::requirement_line(const std::string& where, const std::vector<std::string>& words, FileRole role) {
  // pip's break_args_options: the requirement is the words before the first one that starts with '-'.
  std::size_t i = 0;
  std::string text;
  for (; i < words.size() && !words[i].starts_with("-"); ++i) text += (text.empty() ? "" : " ") + words[i];
  FileRequirement r{text, {}, where};
  while (i < words.size()) {
    const auto o = ENVFIX_TRY(take_option(words, i, where));
    if (o.name != "hash")
      return make_error(ErrorCode::invalid_input, util::msg("{}: --{} is not taken after a requirement", where, o.name),
                        util::msg("only --hash may follow a requirement on its line"));
    r.sha256.push_back(ENVFIX_TRY(sha256_of(o.value, where)));
    into.require_hashes = true;
  }
  (role == FileRole::requirements ? into.requirements : into.constraints).push_back(std::move(r));
  return {};
}

Expected<void> Reader::read_lines(const fs::path& path, const std::string& content, FileRole role) {
  for (const auto& line : logical_lines(content)) {
    const std::string where = fmt::format("{}:{}", path.string(), line.number);
    std::vector<std::string> words;
    for (auto& w : util::split(line.text, ' '))
      if (auto t = util::trim(w); !t.empty()) words.emplace_back(t);
    if (words.front().starts_with("-"))
      ENVFIX_TRY_VOID(option_line(path, where, words, role));
    else
      ENVFIX_TRY_VOID(requirement_line(where, words, role));
  }
  return {};
}

std::vector<std::string> string_array(const toml::node* node) {
  std::vector<std::string> out;
  if (const auto* a = node ? node->as_array() : nullptr)
    for (const auto& e : *a)
      if (auto s = e.value<std::string>()) out.push_back(*s);
  return out;
}

Expected<void> Reader::pyproject(const fs::path& path, const std::string& content, FileRole role) {
  toml::table doc;
  try {
    doc = toml::parse(content, path.string());
  } catch (const toml::parse_error& e) {
    return make_error(ErrorCode::invalid_input,
                      util::msg("{} is not valid TOML: {}", path.string(), std::string(e.description())));
  }
  const auto* project = doc["project"].as_table();
  if (!project)
    return make_error(ErrorCode::invalid_input, util::msg("{} has no [project] table", path.string()),
                      util::msg("envfix reads the dependencies of PEP 621's [project]; export others with "
                                "their tool (`poetry export`, `pdm export`) and pass the file with -r"));
  for (const auto& d : string_array(project->get("dynamic")))
    if (d == "dependencies" || (d == "optional-dependencies" && (extras.all || !extras.names.empty())))
      return make_error(ErrorCode::invalid_input, util::msg("{} declares its {} dynamic", path.string(), d),
                        util::msg("envfix reads only what pyproject.toml states; compile them with "
                                  "`pip-compile` or `uv pip compile` and pass that file with -r"));
  auto& out = role == FileRole::requirements ? into.requirements : into.constraints;
  for (const auto& t : string_array(project->get("dependencies")))
    out.push_back({t, {}, fmt::format("{} [project.dependencies]", path.string())});
  const auto* optional = project->get("optional-dependencies") ? project->get("optional-dependencies")->as_table() : nullptr;
  std::set<std::string> wanted;
  for (const auto& e : extras.names) wanted.insert(specs::normalize_name(e));
  std::vector<std::string> offered;
  if (optional)
    for (const auto& [key, value] : *optional) {
      const std::string name(key.str());
      offered.push_back(name);
      if (!extras.all && !wanted.erase(specs::normalize_name(name))) continue;
      for (const auto& t : string_array(&value))
        out.push_back({t, {}, fmt::format("{} [project.optional-dependencies.{}]", path.string(), name)});
    }
  if (!wanted.empty())
    return make_error(ErrorCode::invalid_input,
                      util::msg("{} has no optional dependencies named {}", path.string(), *wanted.begin()),
                      offered.empty() ? util::msg("it declares no optional dependencies")
                                      : util::msg("it declares: {}", util::join(offered, ", ")));
  return {};
}

Expected<void> Reader::read(const fs::path& path, FileRole role) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  if (std::ranges::find(open, canonical) != open.end())
    return make_error(ErrorCode::invalid_input, util::msg("{} includes itself through -r or -c", path.string()));
  auto content = util::read_file(path);
  if (!content)
    return with_hint(std::unexpected(std::move(content).error()),
                     util::msg("a requirements file is read relative to the current folder, a nested -r/-c relative "
                               "to the file that names it"));
  into.files.push_back(path.string());
  open.push_back(canonical);
  auto done = path.filename() == "pyproject.toml" ? pyproject(path, *content, role) : read_lines(path, *content, role);
  open.pop_back();
  return done;
}

bool pinned_exactly(const std::string& text) {
  if (text.ends_with(".whl") || text.find(" @ ") != std::string::npos || text.find("://") != std::string::npos) return true;
  auto r = specs::Requirement::parse(text);
  if (!r || !r->url.empty()) return r.has_value();
  const auto& clauses = r->specifier.clauses();
  return clauses.size() == 1 && !clauses.front().wildcard() &&
         (clauses.front().op() == specs::SpecOperator::equal || clauses.front().op() == specs::SpecOperator::arbitrary);
}

} // namespace

Expected<void> read_requirements(const fs::path& path, FileRole role, const Extras& extras, FileInput& into) {
  Reader reader{extras, into, {}};
  return reader.read(path, role);
}

Expected<void> check_hash_pins(const FileInput& in) {
  if (!in.require_hashes) return {};
  for (const auto& r : in.requirements) {
    if (r.sha256.empty())
      return make_error(
          ErrorCode::invalid_input,
          util::msg("{}: {} has no --hash, and in hash-checking mode every requirement needs one", r.origin, r.text),
          util::msg("generate the file with `pip-compile --generate-hashes` or `uv pip compile "
                    "--generate-hashes`, which hash every dependency"));
    if (!pinned_exactly(r.text))
      return make_error(
          ErrorCode::invalid_input,
          util::msg("{}: {} is not pinned with ==, and in hash-checking mode every requirement is", r.origin, r.text),
          util::msg("pin it to the version its hashes belong to: NAME==VERSION --hash=sha256:…"));
  }
  return {};
}

Expected<FileInput> read_request_files(const RequestFiles& asked, bool other_requirements) {
  const Extras extras{asked.extras, asked.all_extras};
  if ((!extras.names.empty() || extras.all) &&
      std::ranges::none_of(asked.requirements, [](const std::string& f) { return f.ends_with("pyproject.toml"); }))
    return make_error(ErrorCode::invalid_input, util::msg("--extra and --all-extras choose from a pyproject.toml given with -r"),
                      util::msg("envfix plan -r pyproject.toml --extra NAME"));
  FileInput in;
  for (const auto& f : asked.requirements) ENVFIX_TRY_VOID(read_requirements(f, FileRole::requirements, extras, in));
  for (const auto& f : asked.constraints) ENVFIX_TRY_VOID(read_requirements(f, FileRole::constraints, extras, in));
  in.require_hashes = in.require_hashes || asked.require_hashes;
  ENVFIX_TRY_VOID(check_hash_pins(in));
  if (!asked.requirements.empty() && in.requirements.empty() && !other_requirements)
    return make_error(ErrorCode::invalid_input, util::msg("{} names no requirement", util::join(in.files, ", ")));
  return in;
}

} // namespace envfix::project
