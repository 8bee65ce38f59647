// The subcommands. Each add_* registers one subcommand and its options on `app` and returns
// the function that runs it once the command line is parsed: it builds the JSON request
// (the same request a caller of memest_request_json writes), asks the library, and prints.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "options.hpp"

namespace memest_cli {

struct Command {
  CLI::App* cmd;
  std::function<int()> run;  // returns the exit code
};

Command add_pretrain(CLI::App& app);
Command add_model_states(CLI::App& app);
Command add_finetune(CLI::App& app);
Command add_search(CLI::App& app);     // search.cpp
Command add_request(CLI::App& app);
Command add_import(CLI::App& app);     // import.cpp
Command add_models(CLI::App& app);
Command add_gpus(CLI::App& app);
Command add_recipes(CLI::App& app);

// ---- respond.cpp: the library call and the printing ----

// Asks memest_request_json. On success fills `response` and returns 0; on failure prints the
// library's one-line message on stderr (and, with `error_document`, the {"ok": false} document
// on stdout) and returns the exit code (2 bad input, 1 internal).
int ask_library(const std::string& request, ojson& response, bool error_document);

// Prints a response in `output`'s format (table, csv or json). `requested_gpus` (0: unknown) is
// the request's parallel.gpus, for an answer that does not echo it (LLMem's CPU offloading).
void print_response(const ojson& response, const Output& output, int64_t requested_gpus = 0);

// ask_library, then print_response: the whole of a subcommand after its request is built.
int answer(const std::string& request, const Output& output, bool error_document = false);

}  // namespace memest_cli
