#include <CLI/CLI.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"

namespace envfix::cli {

void add_plan_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("plan", "(not yet implemented)");
  cmd->callback([&g] {
    print_error(Error{ErrorCode::internal, "'envfix plan' is not implemented yet", {}, ""});
    g.exit_code = 2;
  });
}

} // namespace envfix::cli
