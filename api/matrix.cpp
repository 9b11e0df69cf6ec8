#include "api/matrix.hpp"

#include <filesystem>

#include "api/host.hpp"
#include "index/index_client.hpp"
#include "util/cache_trust.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

Expected<matrices::Knowledge> matrix_knowledge(const std::string& matrices_dir) {
  return matrices::Knowledge::load_default(matrices_dir);
}

std::vector<LearnedBuild> learned_builds(const matrices::Knowledge& k, const matrices::Framework& f, const std::string& cache_dir,
                                         const std::optional<specs::Version>& version,
                                         const std::vector<specs::ComputeCapability>& gpus) {
  fs::path dir = cache_dir.empty() ? index::default_cache_dir().value_or(fs::path{}) : fs::path(cache_dir);
  if (dir.empty()) return {};
  dir = util::open_cache(dir, false).value_or(fs::path{}); // another user's records are not learned
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir / wheel::evidence_dir_name, ec)) return {};
  return resolver::learned_builds(k, f, evidence_store_at(dir), version, gpus);
}

} // namespace envfix::api
