#include "api/rollback.hpp"

#include <fmt/format.h>

#include "installer/install_target.hpp"
#include "probe/host_facts.hpp"

namespace envfix::api {
namespace {

Expected<installer::InstallTarget> target_of(const Options& o) {
  std::optional<std::filesystem::path> explicit_python;
  if (!o.python.empty()) explicit_python = o.python;
  auto python = ENVFIX_TRY(probe::default_interpreter(explicit_python));
  return installer::InstallTarget::from_interpreter(python);
}

Expected<std::vector<installer::BackupInfo>> kept_at(const installer::InstallTarget& target) {
  auto kept = ENVFIX_TRY(installer::kept_backups(target));
  if (kept.empty())
    return std::unexpected(Error::made(ErrorCode::not_found, util::msg("nothing to roll back in {}", target.prefix.string()), {},
                                       util::msg("only envfix transactions applied with a backup can be undone (`envfix apply "
                                                 "--keep-backups N` keeps N)")));
  return kept;
}

} // namespace

Expected<std::vector<installer::BackupInfo>> kept_backups(const Options& o) { return kept_at(ENVFIX_TRY(target_of(o))); }

Expected<RollbackReport> rollback(const Options& o) {
  const auto target = ENVFIX_TRY(target_of(o));
  const auto kept = ENVFIX_TRY(kept_at(target));
  RollbackReport r{ENVFIX_TRY(installer::rollback(target)), kept.size() - 1};
  return r;
}

Expected<std::uint64_t> drop_backups(const Options& o) {
  const auto target = ENVFIX_TRY(target_of(o));
  return installer::drop_backups(target);
}

Expected<RecoverReport> recover(const Options& o) {
  const auto target = ENVFIX_TRY(target_of(o));
  auto r = ENVFIX_TRY(installer::recover(target));
  return RecoverReport{target.prefix, std::move(r.actions)};
}

} // namespace envfix::api
