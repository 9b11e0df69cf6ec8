// envfix rollback | recover (docs/architecture.md, The transaction): undo the last committed
// transaction from its backup, or finish/undo a transaction a crash left behind.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api/rollback.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {
namespace {

nlohmann::json refs(const std::vector<installer::DistRef>& v) {
  auto a = nlohmann::json::array();
  for (const auto& d : v) a.push_back({{"name", d.name}, {"version", d.version}});
  return a;
}

} // namespace

void add_rollback_command(CLI::App& app, Globals& g) {
  auto* rb = app.add_subcommand("rollback", i18n::trs("Undo the last transaction (from its backup)"));
  add_examples(*rb, {{"envfix rollback --dry-run", i18n::trs("what the last apply's undo would restore")},
                     {"envfix rollback", i18n::trs("undo it")}});
  auto dry = std::make_shared<bool>(false);
  auto drop = std::make_shared<bool>(false);
  rb->add_flag("--dry-run", *dry, i18n::trs("Only say what would be undone and how much backup is kept"));
  rb->add_flag("--no-backup", *drop, i18n::trs("Delete the kept backup instead (frees disk; rollback becomes impossible)"));
  // Rollback asks nothing; -y/--yes is accepted so that scripts written for apply work unchanged.
  auto yes = std::make_shared<bool>(false);
  rb->add_flag("-y,--yes", *yes, i18n::trs("Accepted for symmetry with apply; rollback does not ask"));
  // The callback owns every flag's storage: CLI11 writes through the bound reference while parsing.
  rb->callback([&g, dry, drop, yes] {
    if (*drop) {
      auto freed = api::drop_backups(g);
      if (!freed) {
        g.exit_code = fail(freed.error());
        return;
      }
      if (g.format == "json")
        machine_json(nlohmann::json{{"freed_bytes", *freed}});
      else
        human(i18n::trf("Deleted the kept backup ({})", human_size(*freed)));
      return;
    }
    auto more_line = [](std::size_t n) {
      return n == 1 ? i18n::trf("{} older step kept: `envfix rollback` again undoes it", n)
                    : i18n::trf("{} older steps kept: `envfix rollback` again undoes them one at a time, newest first", n);
    };
    if (*dry) {
      auto kept = api::kept_backups(g);
      if (!kept) {
        g.exit_code = fail(kept.error());
        return;
      }
      const auto& b = kept->front();
      if (g.format == "json") {
        auto older = nlohmann::json::array();
        for (std::size_t i = 1; i < kept->size(); ++i)
          older.push_back({{"id", (*kept)[i].id},
                           {"backup_bytes", (*kept)[i].bytes},
                           {"would_restore", refs((*kept)[i].removed)},
                           {"would_remove", refs((*kept)[i].installed)}});
        machine_json(nlohmann::json{{"id", b.id},
                                    {"backup_bytes", b.bytes},
                                    {"would_restore", refs(b.removed)},
                                    {"would_remove", refs(b.installed)},
                                    {"older", older}});
      } else {
        human(i18n::trf("Would undo transaction {} (backup: {})", b.id, human_size(b.bytes)));
        for (const auto& d : b.installed) human(fmt::format(" - {}=={}", d.name, d.version));
        for (const auto& d : b.removed) human(fmt::format(" + {}=={}", d.name, d.version));
        if (kept->size() > 1) human(more_line(kept->size() - 1));
      }
      return;
    }
    auto rep = api::rollback(g);
    if (!rep) {
      g.exit_code = fail(rep.error());
      return;
    }
    const auto& r = rep->result;
    if (g.format == "json") {
      machine_json(nlohmann::json{{"id", r.id},
                                  {"restored", refs(r.restored)},
                                  {"removed", refs(r.removed)},
                                  {"freed_bytes", r.freed_bytes},
                                  {"steps_left", rep->steps_left}});
    } else {
      human(i18n::trf("Rolled back transaction {}", r.id));
      for (const auto& d : r.removed) human(fmt::format(" - {}=={}", d.name, d.version));
      for (const auto& d : r.restored) human(fmt::format(" + {}=={}", d.name, d.version));
      human(i18n::trf("Freed {} of backup", human_size(r.freed_bytes)));
      if (rep->steps_left) human(more_line(rep->steps_left));
    }
  });

  auto* rc = app.add_subcommand("recover", i18n::trs("Finish or undo a transaction interrupted by a crash"));
  rc->callback([&g] {
    auto r = api::recover(g);
    if (!r) {
      g.exit_code = fail(r.error());
      return;
    }
    if (g.format == "json") {
      machine_json(nlohmann::json{{"prefix", r->prefix.string()}, {"actions", util::texts(r->actions)}});
      return;
    }
    if (r->actions.empty()) human(i18n::trf("Nothing to recover in {}", r->prefix.string()));
    for (const auto& a : r->actions) human(i18n::tr(a));
  });
}

} // namespace envfix::cli
