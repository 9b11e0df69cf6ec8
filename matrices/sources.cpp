// Where the knowledge comes from: the compiled embedded data, an override directory, the environment.
// Apart from loader.cpp so that the build's compile step (matrices/compile.cpp) links without the
// data it is making.
#include <algorithm>
#include <filesystem>

#include "matrices/compiled.hpp"
#include "matrices/knowledge.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"

namespace envfix::matrices {

// The build's compiled form (matrices/compiled.hpp); the YAML itself should that ever fail to read.
Expected<Knowledge> Knowledge::load_embedded() {
  if (auto k = knowledge_from_json(compiled_json())) return k;
  return load_from(embedded_files());
}

Expected<Knowledge> Knowledge::load(const std::filesystem::path& override_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(override_dir, ec))
    return make_error(ErrorCode::not_found, util::msg("matrices override directory {} does not exist", override_dir.string()),
                      util::msg("--matrices DIR / ENVFIX_MATRICES must name a directory of *.yaml files"));
  std::vector<std::filesystem::path> paths;
  for (auto it = std::filesystem::directory_iterator(override_dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    auto ext = it->path().extension();
    if (ext == ".yaml" || ext == ".yml") paths.push_back(it->path());
  }
  if (ec) return make_error(ErrorCode::io, util::msg("cannot list {}: {}", override_dir.string(), ec.message()));
  std::sort(paths.begin(), paths.end());
  std::vector<SourceFile> files = embedded_files();
  for (const auto& p : paths) {
    auto text = util::read_file(p);
    if (!text) return std::unexpected(Error(text.error()).context(util::msg("reading matrices override {}", p.string())));
    files.push_back({p.string(), std::move(*text)});
  }
  return load_from(files);
}

Expected<Knowledge> Knowledge::load_default(const std::string& cli_dir) {
  if (!cli_dir.empty()) return load(cli_dir);
  if (auto env = util::get_env(util::Env::matrices); env && !env->empty()) return load(*env);
  return load_embedded();
}

} // namespace envfix::matrices
