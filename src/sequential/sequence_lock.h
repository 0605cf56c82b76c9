// One sequential loop per sweep: held by egm sweep --until for its whole
// life, launches and looks alike (an flock on DB.until-NAME.lock beside the
// database; the kernel releases it when the process ends, however it ends). A
// second loop of the same sweep is refused in one line naming the holder.
#pragma once

#include <string>

namespace egm::sequential {

class SequenceLock {
 public:
  SequenceLock(const std::string& db_path, const std::string& sweep_name);
  ~SequenceLock();
  SequenceLock(const SequenceLock&) = delete;
  SequenceLock& operator=(const SequenceLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace egm::sequential
