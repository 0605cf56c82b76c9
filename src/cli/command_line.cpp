// The command line main() was given (torch_verbs.h), for egm's exec into egm-torch.
#include "cli/torch_verbs.h"

namespace egm::cli {
namespace {
char** g_argv = nullptr;
}  // namespace

void set_command_line(int, char** argv) { g_argv = argv; }
char** command_line() { return g_argv; }

}  // namespace egm::cli
