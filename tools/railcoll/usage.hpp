// The usage of every verb, in one table: `railcoll --help` lists the verbs
// from it and `railcoll VERB --help` (or -h, or `railcoll help VERB`) prints a
// verb's full usage, whoever owns the verb's file (main.cpp answers for all).
#pragma once
#include <string>

namespace railcoll::cli {

// The full usage of `verb`; nullptr for a verb the table does not know.
const char* verb_usage(const std::string& verb);
// `railcoll --help`: every verb, one short entry each.
std::string top_usage();

}  // namespace railcoll::cli
