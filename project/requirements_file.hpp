#pragma once
// Requirements files as pip and uv read them (`-r requirements.txt`, `-c constraints.txt`), and a
// pyproject.toml's [project] dependencies with the extras asked for (`-r pyproject.toml --extra E`,
// as `uv pip install` takes it). README.md, the pip/uv table, lists what is taken and what is refused.
#include <filesystem>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace envfix::project {

// One requirement as a file gave it: the text the request parser takes (resolver/direct.hpp), the
// sha256 digests its --hash options allow (lowercase hex) and where it was written.
struct FileRequirement {
  std::string text;
  std::vector<std::string> sha256;
  std::string origin; // "requirements.txt:12"
};

// Everything the files said, in the order they said it.
struct FileInput {
  std::vector<FileRequirement> requirements;
  std::vector<FileRequirement> constraints;
  std::string index_url;                     // -i/--index-url (the last one given)
  std::vector<std::string> extra_index_urls; // --extra-index-url
  std::vector<std::string> find_links;       // -f/--find-links, relative to the file's folder
  bool no_index = false;                     // --no-index
  bool pre = false;                          // --pre
  bool require_hashes = false;               // --require-hashes, or any --hash (pip's hash-checking mode)
  std::vector<std::string> files;            // every file read, first to last
};

enum class FileRole { requirements, constraints };

// Which optional dependencies of a pyproject.toml to take (--extra NAME, --all-extras).
struct Extras {
  std::vector<std::string> names;
  bool all = false;
};

// Reads `path` into `into`: a requirements file (with its nested -r/-c files, relative to it), or a
// file named pyproject.toml. invalid_input names the file and line of what cannot be taken (an
// editable install, an option pip would not take there, a hash other than sha256, a loop of -r).
[[nodiscard]] Expected<void> read_requirements(const std::filesystem::path& path, FileRole role, const Extras& extras,
                                               FileInput& into);

// Hash-checking mode, as pip has it: every requirement of the files pinned to one version with `==`
// (or a wheel file) and carrying at least one hash. The first one that is not, named with its origin.
[[nodiscard]] Expected<void> check_hash_pins(const FileInput& in);

// A command's -r and -c files, its --extra/--all-extras and --require-hashes (plan, apply, lock).
struct RequestFiles {
  std::vector<std::string> requirements;
  std::vector<std::string> constraints;
  std::vector<std::string> extras;
  bool all_extras = false;
  bool require_hashes = false; // --require-hashes; a --hash in a file turns it on as well
};

// Every file read, in order, into one FileInput, hash pins checked (check_hash_pins). invalid_input
// for --extra without a pyproject.toml among the -r files, and for -r files that name no requirement
// when the command line names none either (`other_requirements` false).
[[nodiscard]] Expected<FileInput> read_request_files(const RequestFiles& files, bool other_requirements);

} // namespace envfix::project
