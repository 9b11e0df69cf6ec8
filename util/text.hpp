#pragma once
// Text that came from outside (archive member names, index pages, subprocess output, file
// contents) is printed only through escape_control: a wheel must not be able to set the terminal
// title or clear the screen through an error message (docs/reliability.md, "terminal escapes").
#include <string>
#include <string_view>

namespace envfix::util {

// C0 controls (except '\n' and '\t' when `keep_newlines`), DEL and the C1 controls U+0080–U+009F
// become visible escapes (\x1b, \u009b); bytes that are not valid UTF-8 become \xNN. Everything
// else, including non-ASCII letters, is kept. `keep_sgr` lets colour sequences (ESC [ digits;… m,
// what cli's styled() writes) through: they can change colours only, never the title or the screen.
[[nodiscard]] std::string escape_control(std::string_view text, bool keep_newlines = true, bool keep_sgr = false);

} // namespace envfix::util
