// Turns SIGINT, SIGTERM and SIGUSR2 (Slurm's warning before a time limit or
// preemption) into a flag the training loop polls, so a run checkpoints and
// stops cleanly instead of dying mid-step.
#pragma once

#include <string>

namespace egm {

// Installs the handlers (idempotent). A second SIGINT restores the default
// action, so an impatient Ctrl-C still kills the process.
void install_stop_signal_handlers();

// True once a stop signal arrived; which one (SIGTERM, SIGUSR2, ...) or 0.
// The first signal counts. Under `egm sweep`, which runs mpirun as its child,
// the signal egm sweep itself got is the reason: mpirun passes a Ctrl-C on to
// the ranks as SIGTERM. egm sweep writes it (a decimal number) into the file
// named by kStopSignalFileEnv before passing the stop on; stop_signal()
// returns that one when the file holds a signal.
bool stop_requested();
int stop_signal();
inline constexpr const char* kStopSignalFileEnv = "EGM_STOP_SIGNAL_FILE";

// The exit status of a process a stop signal ended cleanly (checkpointed):
// EX_TEMPFAIL, run it again to resume (egm train, egm sweep, its --until loop).
inline constexpr int kExitInterrupted = 75;

// A signal's name ("SIGINT", "SIGTERM", "SIGUSR2", ...; "signal N" for others),
// and a stop signal described for people: "SIGINT (Ctrl-C)", "SIGTERM
// (preemption or cancel)", "SIGUSR2 (time-limit warning)". One wording for the
// coordinator's records and egm sweep's last line.
std::string signal_name(int signal_number);
std::string describe_stop_signal(int signal_number);

// For tests and for a coordinator relaying a stop message.
void request_stop(int signal_number);
void clear_stop_request();

}  // namespace egm
