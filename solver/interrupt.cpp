#include "solver/interrupt.hpp"

#include <csignal>

#include <signal.h>

namespace minimod {
namespace {

volatile std::sig_atomic_t g_signal = 0;
/// The handlers an InterruptScope replaced.
struct sigaction g_previous_int, g_previous_term;

extern "C" void record_signal(int signal) {
  // A second signal while the first is being handled must not restart the clean-up: keep the
  // first, and let a third fall back to the default action (the process ends at once).
  if (g_signal == 0) {
    g_signal = signal;
  } else {
    std::signal(signal, SIG_DFL);
  }
}

} // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by " + signal_name(signal)), m_signal(signal) {}

void install_interrupt_handlers() {
  std::signal(SIGINT, record_signal);
  std::signal(SIGTERM, record_signal);
}

InterruptScope::InterruptScope() {
  g_signal = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
  g_signal = 0;
}

int interrupt_signal() {
  return g_signal;
}

void throw_if_interrupted() {
  if (g_signal != 0) throw Interrupted(g_signal);
}

std::string signal_name(int signal) {
  switch (signal) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  default:
    return "signal " + std::to_string(signal);
  }
}

} // namespace minimod
