#include <CLI/CLI.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"

namespace envfix::cli {

void add_verify_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("verify", "(not yet implemented)");
  cmd->callback([&g] {
    print_error(Error{ErrorCode::internal, "'envfix verify' is not implemented yet", {}, ""});
    g.exit_code = 2;
  });
}

} // namespace envfix::cli
