#include <CLI/CLI.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"

namespace envfix::cli {

void add_apply_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("apply", "(not yet implemented)");
  cmd->callback([&g] {
    print_error(Error{ErrorCode::internal, "'envfix apply' is not implemented yet", {}, ""});
    g.exit_code = 2;
  });
}

} // namespace envfix::cli
