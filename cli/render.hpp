#pragma once
// All terminal output of envfix goes through here (only cli/ prints).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <fmt/core.h>

#include "util/error.hpp"

namespace envfix::cli {

struct Globals;

enum class Style { plain, bold, dim, red, green, yellow, blue, cyan };

// Decide once whether stderr gets colour (NO_COLOR, --color, isatty).
void init_output(const Globals& g);
// Pick the language of human output (i18n/): --lang, else LANGUAGE/LC_ALL/LC_MESSAGES/LANG. An unknown
// --lang is a usage error: printed (fail()), its exit code returned; 0 when fine.
[[nodiscard]] int init_language(const Globals& g);
// The same choice before the CLI11 app exists, for its help texts: the environment's language, or a
// known `--lang X` / `--lang=X` in argv (an unknown one is left to init_language to report).
void preset_language(int argc, const char* const* argv);
[[nodiscard]] bool color_enabled();
[[nodiscard]] std::string styled(std::string_view text, Style s);

// Human output: stderr. Machine output (--format json): stdout.
void human(std::string_view text);        // a line (newline added) to stderr unless -q
void machine(std::string_view json_text); // one document to stdout
// The same from a document, indented: bytes that are not UTF-8 (a path or an argument the user gave)
// become U+FFFD instead of stopping envfix with an exception.
void machine_json(const nlohmann::json& doc);
void print_error(const Error& e);
void warn(const util::Message& m); // translated by its id

// Exit code for an error (docs/architecture.md, JSON and exit codes).
[[nodiscard]] int exit_code_for(const Error& e);
// The error document of docs/json.md ({"error": {code, message, causes, hint}}).
[[nodiscard]] std::string error_json(const Error& e);
// A command that ends in `e`: printed on stderr, and with --format json also as the error document on
// stdout; returns the exit code.
[[nodiscard]] int fail(const Error& e);
// A command's result as its exit code; an error goes through fail().
[[nodiscard]] int finish_command(const Expected<int>& rc);

} // namespace envfix::cli
