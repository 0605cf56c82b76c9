// resolve_runtime (run_options.h), in egm-torch: checking a device needs LibTorch.
#include "cli/run_options.h"
#include "data/corpus_source.h"
#include "train/trainer.h"

namespace egm::cli {

RuntimeOptions resolve_runtime(const RunConfigFlags& f) {
  RuntimeOptions r;
  r.threads = f.threads;
  torch_device(f.device);  // a device this build or machine lacks stops here, before --out is made
  r.device = f.device;
  r.data_path = locate_corpus(f.data);
  return r;
}

}  // namespace egm::cli
