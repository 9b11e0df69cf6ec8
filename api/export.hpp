#pragma once
// envfix export --as pylock|requirements [-o FILE] [--target ID] [--all]: a lockfile target as PEP
// 751 pylock.toml or as pip requirements with --hash lines (docs/lockfile.md, "export"). Files are
// written here; a file named "-" is returned with its text for the caller to print.
#include <cstddef>
#include <string>
#include <vector>

#include "api/options.hpp"
#include "util/error.hpp"

namespace envfix::api {

enum class ExportFormat { pylock, requirements };

struct ExportRequest {
  ExportFormat format = ExportFormat::pylock;
  std::string output; // a file, "-" (stdout), with `all` a directory; "" = pylock.toml or stdout
  std::string target; // a target id; "" = the one matching this host, or the only one
  bool all = false;   // every target, one file each (pylock.<id>.toml, requirements-<id>.txt)
};

struct ExportedFile {
  std::string target; // its target id
  std::size_t packages = 0;
  std::string path; // "-": not written, `text` is for stdout
  std::string text;
};

// Every file's text and name are made before any is written: a target that cannot be exported
// leaves no file behind.
[[nodiscard]] Expected<std::vector<ExportedFile>> export_lock(const Options& o, const ExportRequest& r);

} // namespace envfix::api
