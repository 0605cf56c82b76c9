// Number flags read as people write them, in decimal. CLI11 reads an INT or
// UINT flag with strtoll/strtoull in base 0 ("010" is 8, "0x10" is 16; "-1"
// for an unsigned flag wraps to 2^64 - 1; a value past 64 bits saturates: a
// bootstrap seed of 10^23 became 2^64 - 1, `--steps 99999999999999999999`
// trained for 2^63 - 1 steps), and a FLOAT flag with strtod ("nan", "inf",
// "0x1p3" and 1e999, which overflows to infinity, all pass: `--stop-timeout
// nan` reached a cast to an integer, undefined). Here every such flag of a
// command tree, wherever it is registered, takes a decimal number only: a whole
// number within 64 bits (a '-' only where the type is signed) for INT and
// UINT, a finite number for FLOAT; else the parse fails, in one line naming the
// flag, exit 2. Ranges (at least 1, a level below 1, ...) stay with each flag.
#pragma once

#include <CLI/CLI.hpp>

namespace egm::cli {

// Adds the decimal reading, first among its validators, to every INT, UINT and FLOAT
// option (CLI11's type names) of `app` and of its subcommands at any depth:
// called once, after every verb has registered its flags.
void read_numbers_as_decimal(CLI::App& app);

}  // namespace egm::cli
