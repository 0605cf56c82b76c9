// egm-torch's run_export (export_verb.h): egm runs the export verb itself and
// never execs egm-torch for it; reaching this is egm-torch started by hand.
#include "cli/export_verb.h"
#include "util/error.h"

namespace egm::cli {

void run_export(const ExportArgs&) {
  EGM_THROW(ConfigError, "egm export runs in egm, not egm-torch: run egm export");
}

}  // namespace egm::cli
