// Turns SIGINT, SIGTERM and SIGUSR2 (Slurm's warning before a time limit or
// preemption) into a flag the training loop polls, so a run checkpoints and
// stops cleanly instead of dying mid-step.
#pragma once

namespace egm {

// Installs the handlers (idempotent). A second SIGINT restores the default
// action, so an impatient Ctrl-C still kills the process.
void install_stop_signal_handlers();

// True once a stop signal arrived; which one (SIGTERM, SIGUSR2, ...) or 0.
bool stop_requested();
int stop_signal();

// For tests and for a coordinator relaying a stop message.
void request_stop(int signal_number);
void clear_stop_request();

}  // namespace egm
